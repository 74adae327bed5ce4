//! What a neighbors run is asked to do: the workers and where they go, the burner steps and
//! how burners run, the run length. Every value and every combination is checked as the
//! config is built, so a bad one is refused before the first step.

use crate::burn::{BurnSpec, BurnerKind};
use crate::engine::RunSpec;
use crate::error::BadInput;
use crate::placement::{Request, Scope};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Where burners go relative to the workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BurnerPlacement {
    /// Unpinned: the scheduler decides, as on a machine nobody tuned.
    Os,
    /// On the workers' CPUs, in turn.
    SameCpus,
    /// On the SMT siblings of the workers' CPUs (needs SMT).
    Siblings,
    /// On cores no worker uses.
    OtherCores,
}

impl BurnerPlacement {
    pub fn label(self) -> &'static str {
        match self {
            Self::Os => "os",
            Self::SameCpus => "same-cpus",
            Self::Siblings => "siblings",
            Self::OtherCores => "other-cores",
        }
    }
}

impl fmt::Display for BurnerPlacement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

impl std::str::FromStr for BurnerPlacement {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "os" => Ok(Self::Os),
            "same-cpus" => Ok(Self::SameCpus),
            "siblings" => Ok(Self::Siblings),
            "other-cores" => Ok(Self::OtherCores),
            _ => Err(format!(
                "unknown burner placement `{s}`; valid: os, same-cpus, siblings, other-cores"
            )),
        }
    }
}

/// Thread burners share the engine run; process burners are re-executed `smtlab burn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BurnerMode {
    Thread,
    Process,
}

impl BurnerMode {
    pub fn label(self) -> &'static str {
        match self {
            Self::Thread => "thread",
            Self::Process => "process",
        }
    }
}

impl fmt::Display for BurnerMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// A checked neighbors configuration. [`NeighborsConfig::new`] and
/// [`NeighborsConfig::with_burners`] are the only way to build one; each refuses a bad
/// value or combination, naming it and what would be valid.
#[derive(Debug, Clone)]
pub struct NeighborsConfig {
    /// Worker threads, 1 to [`crate::limits::MAX_THREADS`].
    pub workers: usize,
    /// Worker placement (default `os`); never `all`, which changes the worker count.
    pub worker_placement: Request,
    /// The unit a scoped worker placement stays inside.
    pub within: Scope,
    /// Burner counts, one step each, in order.
    pub burner_steps: Vec<usize>,
    pub burner: BurnSpec,
    pub burner_placement: BurnerPlacement,
    pub burner_mode: BurnerMode,
    pub spec: RunSpec,
    /// Rounds over the steps, each starting again from the first step; at least 1.
    pub repeat: usize,
    /// Keeps construction to the checked paths below.
    _checked: Checked,
}

/// Only this module can make one, so only its constructors build a config.
#[derive(Debug, Clone, Copy)]
struct Checked;

impl NeighborsConfig {
    /// `workers` placed by `worker_placement` inside one unit of `within`, each step run
    /// for `spec`; no burners yet (one step of 0), `prime` burner threads placed by the OS.
    pub fn new(
        workers: usize,
        worker_placement: Request,
        within: Scope,
        spec: RunSpec,
    ) -> Result<Self, BadInput> {
        if workers == 0 {
            return Err(BadInput("--workers must be at least 1 (got 0)".into()));
        }
        crate::limits::at_most(
            "--workers",
            workers as u64,
            crate::limits::MAX_THREADS,
            "worker threads; more only measure the scheduler",
        )?;
        if worker_placement == Request::All {
            return Err(BadInput(
                "--placement all runs every sibling of --workers cores, which changes the worker \
                 count; give the count with --workers and use one-per-core, pairs or spread"
                    .into(),
            ));
        }
        Ok(NeighborsConfig {
            workers,
            worker_placement,
            within,
            burner_steps: vec![0],
            burner: BurnSpec::new(BurnerKind::Prime),
            burner_placement: BurnerPlacement::Os,
            burner_mode: BurnerMode::Thread,
            spec,
            repeat: 1,
            _checked: Checked,
        })
    }

    /// The burner steps, what each burner runs, where and how.
    pub fn with_burners(
        mut self,
        steps: Vec<usize>,
        burner: BurnSpec,
        placement: BurnerPlacement,
        mode: BurnerMode,
    ) -> Result<Self, BadInput> {
        if steps.is_empty() {
            return Err(BadInput(
                "--burners lists no step; give counts like 0,1,2,4".into(),
            ));
        }
        let max = match mode {
            BurnerMode::Process => crate::limits::MAX_PROCESSES,
            BurnerMode::Thread => crate::limits::MAX_THREADS,
        };
        for &b in &steps {
            crate::limits::at_most("--burners", b as u64, max, "burners per step")?;
        }
        // Unpinned workers move between CPUs, so no CPU is "their sibling": a burner there
        // would share a core with a worker only by chance.
        if placement == BurnerPlacement::Siblings
            && !self.worker_placement.is_pinned()
            && steps.iter().any(|&b| b > 0)
        {
            return Err(BadInput(format!(
                "--burner-placement siblings needs pinned workers, but --placement is `{}` \
                 (unpinned): pin the workers one per core (--placement one-per-core) so each \
                 has a free sibling",
                self.worker_placement
            )));
        }
        self.burner_steps = steps;
        self.burner = burner;
        self.burner_placement = placement;
        self.burner_mode = mode;
        Ok(self)
    }
}

impl NeighborsConfig {
    /// Rounds over the steps (`--repeat`), at least 1: each round runs every step in order, so every step has a first step of its own round to be
    /// paired with.
    pub fn with_repeat(mut self, repeat: usize) -> Result<Self, BadInput> {
        if repeat == 0 {
            return Err(BadInput(
                "--repeat must be at least 1 (rounds over the burner steps)".into(),
            ));
        }
        self.repeat = repeat;
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn spec() -> RunSpec {
        RunSpec::new(Duration::ZERO, Duration::from_millis(100)).unwrap()
    }

    fn two() -> NeighborsConfig {
        NeighborsConfig::new(2, Request::Os, Scope::Package, spec()).unwrap()
    }

    #[test]
    fn workers_and_their_placement_are_checked() {
        let e = NeighborsConfig::new(0, Request::Os, Scope::Package, spec()).unwrap_err();
        assert!(e.0.contains("--workers must be at least 1"), "{e}");
        let e = NeighborsConfig::new(100_000_000, Request::Os, Scope::Package, spec()).unwrap_err();
        assert!(e.0.contains("--workers 100000000: at most 4096"), "{e}");
        let e = NeighborsConfig::new(2, Request::All, Scope::Package, spec()).unwrap_err();
        assert!(e.0.contains("--placement all"), "{e}");
        // A zero run length cannot reach a config: the spec refuses it.
        assert!(RunSpec::new(Duration::ZERO, Duration::ZERO).is_err());
        assert_eq!(two().burner_steps, [0]);
        assert_eq!(two().repeat, 1);
        let e = two().with_repeat(0).unwrap_err();
        assert!(e.0.contains("--repeat must be at least 1"), "{e}");
        assert_eq!(two().with_repeat(3).unwrap().repeat, 3);
    }

    #[test]
    fn burner_steps_are_bounded_by_mode() {
        let prime = BurnSpec::new(BurnerKind::Prime);
        let ok = two().with_burners(
            vec![0, 4096],
            prime.clone(),
            BurnerPlacement::Os,
            BurnerMode::Thread,
        );
        assert_eq!(ok.unwrap().burner_steps, [0, 4096]);
        let e = two()
            .with_burners(
                vec![0, 4096],
                prime.clone(),
                BurnerPlacement::Os,
                BurnerMode::Process,
            )
            .unwrap_err();
        assert!(e.0.contains("--burners 4096: at most 1024"), "{e}");
        let e = two()
            .with_burners(
                vec![],
                prime.clone(),
                BurnerPlacement::Os,
                BurnerMode::Thread,
            )
            .unwrap_err();
        assert!(e.0.contains("--burners lists no step"), "{e}");
        // A nice value out of range cannot reach a config: the burner spec refuses it.
        let e = prime.clone().with_nice(Some(40)).unwrap_err();
        assert!(e.0.contains("--nice 40"), "{e}");
    }

    #[test]
    fn sibling_burners_need_pinned_workers_once_a_step_has_burners() {
        let prime = BurnSpec::new(BurnerKind::Prime);
        let e = two()
            .with_burners(
                vec![0, 1],
                prime.clone(),
                BurnerPlacement::Siblings,
                BurnerMode::Thread,
            )
            .unwrap_err();
        assert_eq!(
            e.0,
            "--burner-placement siblings needs pinned workers, but --placement is `os` (unpinned): pin the workers one per core (--placement one-per-core) so each has a free sibling"
        );
        // No burners at all: nothing to place.
        assert!(
            two()
                .with_burners(
                    vec![0],
                    prime.clone(),
                    BurnerPlacement::Siblings,
                    BurnerMode::Thread
                )
                .is_ok()
        );
        let pinned = NeighborsConfig::new(2, Request::OnePerCore, Scope::Package, spec()).unwrap();
        assert!(
            pinned
                .with_burners(
                    vec![0, 1],
                    prime,
                    BurnerPlacement::Siblings,
                    BurnerMode::Thread
                )
                .is_ok()
        );
    }

    #[test]
    fn names_read_as_on_the_command_line() {
        for p in [
            BurnerPlacement::Os,
            BurnerPlacement::SameCpus,
            BurnerPlacement::Siblings,
            BurnerPlacement::OtherCores,
        ] {
            assert_eq!(p.to_string().parse::<BurnerPlacement>().unwrap(), p);
            assert_eq!(serde_json::to_value(p).unwrap(), p.label());
        }
        for m in [BurnerMode::Thread, BurnerMode::Process] {
            assert_eq!(serde_json::to_value(m).unwrap(), m.label());
        }
    }
}
