//! The closed sets that shell completions offer: each wraps one of the parsers beside it
//! (`super`) with the names it accepts.

use super::{List, lock_stats, locks, member, schemes};
use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};

/// A parser that also names the values it takes, so that shell completions offer them
/// (clap_complete reads a parser's `possible_values`). Parsing, and so every error
/// message, stays the wrapped parser's own; the options using it set
/// `hide_possible_values`, so their help reads as before.
#[derive(Clone)]
struct Offer<P> {
    parser: P,
    names: &'static [&'static str],
}

/// Wraps `parser` to offer `names` to completions.
fn offer<P: TypedValueParser>(parser: P, names: &'static [&'static str]) -> Offer<P> {
    Offer { parser, names }
}

impl<P: TypedValueParser> TypedValueParser for Offer<P> {
    type Value = P::Value;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        self.parser.parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.names.iter().map(|n| PossibleValue::new(*n))))
    }
}

/// The placement requests that take no CPU list (`siblings-of:LIST` and `cpus:LIST`
/// need one, so completion cannot finish them).
pub const PLACEMENTS: &[&str] = &[
    "one-per-core",
    "pairs",
    "all",
    "spread",
    "same-core",
    "same-l3",
    "other-l3",
    "other-package",
    "os",
];
const SCOPES: &[&str] = &["package", "l3", "node", "machine"];
const COUNTER_MODES: &[&str] = &["all", "software", "off"];
const BURNER_KINDS: &[&str] = &[
    "prime",
    "int",
    "mul",
    "fma",
    "fma-scalar",
    "fma-avx2",
    "fma-avx512",
    "pause",
    "stream",
    "chase",
    "l1",
    "l2",
    "scan",
];
const LOCK_KINDS: &[&str] = &[
    "tas",
    "ttas",
    "backoff",
    "ticket",
    "mcs",
    "mutex",
    "parking_lot",
    "adaptive",
];
const LOCK_KINDS_OR_ALL: &[&str] = &[
    "tas",
    "ttas",
    "backoff",
    "ticket",
    "mcs",
    "mutex",
    "parking_lot",
    "adaptive",
    "all",
];
const SCHEMES: &[&str] = &[
    "spin",
    "rwspin",
    "rwlock",
    "parking_lot-rw",
    "brlock",
    "seqlock",
    "rcu",
    "all",
];
const BURNER_PLACEMENTS: &[&str] = &["os", "same-cpus", "siblings", "other-cores"];
/// `compare --placements`: the named placements of a comparison.
pub const COMPARE_PLACEMENTS: &[&str] = &["one-per-core", "pairs", "all"];

/// `--placement` as most experiments take it (a [`crate::placement::Request`]).
pub fn placement() -> impl TypedValueParser<Value = crate::placement::Request> {
    offer(crate::placement::Request::parse, PLACEMENTS)
}

/// `--placement` kept as text, for commands that read it as a list of layouts.
pub fn placement_text() -> impl TypedValueParser<Value = String> {
    offer(StringValueParser::new(), PLACEMENTS)
}

/// `compare --placements`.
pub fn compare_placements() -> impl TypedValueParser<Value = String> {
    offer(StringValueParser::new(), COMPARE_PLACEMENTS)
}

/// `compare --burner-placement`, kept as text (the comparison parses it).
pub fn burner_placement_text() -> impl TypedValueParser<Value = String> {
    offer(StringValueParser::new(), BURNER_PLACEMENTS)
}

/// `--within`.
pub fn scope() -> impl TypedValueParser<Value = crate::placement::Scope> {
    offer(member::<crate::placement::Scope>, SCOPES)
}

/// `--counters`.
pub fn counter_modes() -> impl TypedValueParser<Value = crate::counters::Mode> {
    offer(member::<crate::counters::Mode>, COUNTER_MODES)
}

/// A burner kind (`burn --kind`, `neighbors --burner-kind`).
pub fn burner_kind() -> impl TypedValueParser<Value = crate::burn::BurnerKind> {
    offer(member::<crate::burn::BurnerKind>, BURNER_KINDS)
}

/// One lock kind (`neighbors --lock`).
pub fn lock_kind() -> impl TypedValueParser<Value = crate::locks::LockKind> {
    offer(member::<crate::locks::LockKind>, LOCK_KINDS)
}

/// `lockscan --lock`: a list of lock kinds or `all`.
pub fn lock_kinds() -> impl TypedValueParser<Value = List<crate::locks::LockKind>> {
    offer(locks, LOCK_KINDS_OR_ALL)
}

/// `rwcache --scheme`: a list of schemes or `all`.
pub fn scheme_kinds() -> impl TypedValueParser<Value = List<crate::rwcache::SchemeKind>> {
    offer(schemes, SCHEMES)
}

/// `neighbors --burner-placement`.
pub fn burner_placement()
-> impl TypedValueParser<Value = crate::experiments::neighbors::BurnerPlacement> {
    offer(
        member::<crate::experiments::neighbors::BurnerPlacement>,
        BURNER_PLACEMENTS,
    )
}

/// `burn --mode`.
pub fn burn_mode() -> impl TypedValueParser<Value = crate::burn::Mode> {
    offer(member::<crate::burn::Mode>, &["thread", "process"])
}

/// A scheduling policy (`burn --policy`, `neighbors --burner-policy`).
pub fn policy() -> impl TypedValueParser<Value = crate::burn::Policy> {
    offer(member::<crate::burn::Policy>, &["normal", "batch", "idle"])
}

/// `lockscan --lock-stats`.
pub fn lock_stats_mode() -> impl TypedValueParser<Value = crate::locks::StatsMode> {
    offer(lock_stats, &["counters", "off"])
}

/// `--durability`.
pub fn durability() -> impl TypedValueParser<Value = crate::oltp::Durability> {
    offer(crate::oltp::Durability::parse, &["full", "delayed"])
}

/// `--schema`.
pub fn schema() -> impl TypedValueParser<Value = crate::oltp::Schema> {
    offer(crate::oltp::Schema::parse, &["seed-001", "seed-002"])
}

/// `oltp --key`.
pub fn key_mode() -> impl TypedValueParser<Value = crate::oltp::KeyMode> {
    offer(crate::oltp::KeyMode::parse, &["sequential", "random"])
}

/// `smt off|on --method`, kept as text (the command names the option in its error).
pub fn smt_method() -> impl TypedValueParser<Value = String> {
    offer(StringValueParser::new(), &["auto", "control", "cpu-online"])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offered_names_are_accepted() {
        fn all_parse<P: TypedValueParser>(p: &P) {
            let cmd = clap::Command::new("t");
            let names: Vec<String> = p
                .possible_values()
                .expect("offers names")
                .map(|v| v.get_name().to_string())
                .collect();
            assert!(!names.is_empty());
            for n in names {
                assert!(p.parse_ref(&cmd, None, n.as_ref()).is_ok(), "{n}");
            }
        }
        all_parse(&placement());
        all_parse(&scope());
        all_parse(&counter_modes());
        all_parse(&burner_kind());
        all_parse(&lock_kind());
        all_parse(&lock_kinds());
        all_parse(&scheme_kinds());
        all_parse(&burner_placement());
        all_parse(&burn_mode());
        all_parse(&policy());
        all_parse(&lock_stats_mode());
        all_parse(&durability());
        all_parse(&schema());
        all_parse(&key_mode());
        for p in COMPARE_PLACEMENTS {
            assert!(
                crate::experiments::compare::PlacementChoice::parse_named(p).is_ok(),
                "{p}"
            );
        }
        for m in ["auto", "control", "cpu-online"] {
            assert!(m.parse::<crate::smt::plan::Method>().is_ok(), "{m}");
        }
        for p in BURNER_PLACEMENTS {
            assert!(
                p.parse::<crate::experiments::neighbors::BurnerPlacement>()
                    .is_ok()
            );
        }
        for p in PLACEMENTS {
            assert!(crate::oltp::parse_layouts(p).is_ok(), "{p}");
        }
    }
}
