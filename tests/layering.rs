//! The import graph of `src/`, checked: no module imports one of a higher layer, and no two
//! sibling modules import each other, directly or around a circle.
//!
//! The layers are declared once, in [`LAYERS`], top first; ARCHITECTURE.md's module map
//! lists the same top-level modules in the same order (checked here too). A module may use
//! the modules of its own layer and of the layers below it. Sibling modules — the children
//! of one module, or the crate's top-level modules — form no circle: when two of them need
//! one item, it lives in the lower one or in a small module of its own.
//!
//! What counts as an import: every path of a `use` declaration and every `crate::…`,
//! `super::…` and `self::…` path in code (comments, string literals and `#[cfg(test)]`
//! items left out: tests may build what they check from any layer), with paths through a
//! `use` or `pub use` followed to the module that defines the item. A file maps to its
//! module path as rustc does (`src/a/b.rs` and `src/a/b/mod.rs` are `a::b`), inline `mod x
//! { … }` blocks included.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules of `src/`, highest layer first. A module may import the modules on
/// its own line and on the lines below it, never one above. ARCHITECTURE.md's module map
/// lists the same lines in the same order.
const LAYERS: &[&[&str]] = &[
    &["cli"],
    &["commands"],
    &["fleet"],
    &["study"],
    &["report"],
    &["experiments"],
    &["burn", "oltp", "rwcache", "locks"],
    &["smt", "top", "mem"],
    &["engine"],
    &["conclusion"],
    &["hygiene", "tempstate", "limits", "counters"],
    &["placement"],
    &["topology"],
    &["render"],
    &["interrupt", "duration", "error", "fsutil"],
    &[
        "cpuset", "stats", "affinity", "quote", "lenient", "note", "progress",
    ],
];

/// A module path inside the crate (`["experiments", "compare", "fake"]`; the crate root is
/// empty).
type ModPath = Vec<String>;

/// One import: module `from` names an item (or the module itself) of module `to`.
#[derive(Debug, Clone)]
struct Edge {
    from: ModPath,
    to: ModPath,
    /// The path as written, for the message.
    written: String,
    file: PathBuf,
    line: usize,
}

/// What the check found.
#[derive(Debug, Default)]
struct Findings {
    /// Imports of a module from a higher layer.
    upward: Vec<Edge>,
    /// Circles: (parent module, the siblings in order around the circle, one import per
    /// step).
    circles: Vec<(ModPath, Vec<String>, Vec<Edge>)>,
    /// Top-level modules not in [`LAYERS`], or listed there but absent.
    unlisted: Vec<String>,
}

fn show(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_string()
    } else {
        m.join("::")
    }
}

impl std::fmt::Display for Edge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} → {}  ({}:{}: {})",
            show(&self.from),
            show(&self.to),
            self.file.display(),
            self.line,
            self.written
        )
    }
}

// ---------------------------------------------------------------------------------------
// Reading Rust source as tokens, without comments and literal contents.

/// `src` with comments and the contents of string and char literals replaced by spaces
/// (line breaks kept, so line numbers stay), so that neither a doc link nor a message
/// that mentions `crate::x` reads as an import.
fn strip(src: &str) -> String {
    let s: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, cs: &[char]| {
        for &c in cs {
            out.push(if c == '\n' { '\n' } else { ' ' });
        }
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            let end = s[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(s.len(), |p| i + p);
            blank(&mut out, &s[i..end]);
            i = end;
        } else if c == '/' && next == Some('*') {
            let (mut depth, mut j) = (0usize, i);
            while j < s.len() {
                if s[j] == '/' && s.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if s[j] == '*' && s.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &s[i..j.min(s.len())]);
            i = j;
        } else if (c == 'r' || c == 'b') && (i == 0 || !ident(s[i - 1])) && raw_start(&s[i..]) {
            // r"…", r#"…"#, br"…": no escapes; ends at the quote and as many #s.
            let mut j = i + 1 + usize::from(c == 'b');
            let mut hashes = 0;
            while s[j] == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            let close = |k: usize| s[k] == '"' && (1..=hashes).all(|h| s.get(k + h) == Some(&'#'));
            while j < s.len() && !close(j) {
                j += 1;
            }
            let end = (j + 1 + hashes).min(s.len());
            out.push('"');
            blank(&mut out, &s[i + 1..end.saturating_sub(1).max(i + 1)]);
            out.push('"');
            i = end;
        } else if c == '"' {
            let mut j = i + 1;
            while j < s.len() && s[j] != '"' {
                j += if s[j] == '\\' { 2 } else { 1 };
            }
            out.push('"');
            blank(&mut out, &s[i + 1..j.min(s.len())]);
            out.push('"');
            i = j + 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1F600}', '"') or a lifetime ('a).
            if next == Some('\\') {
                // The escaped character (maybe a quote) is at i + 2; the closing quote
                // follows it or the rest of `\u{…}`.
                let end = s[(i + 3).min(s.len())..]
                    .iter()
                    .position(|&c| c == '\'')
                    .map_or(s.len(), |p| i + 3 + p);
                out.push_str("' '");
                i = end + 1;
            } else if s.get(i + 2) == Some(&'\'') {
                out.push_str("' '");
                i += 3;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// True at `r"`, `r#"`, `br"`, `br#"` (a raw string's start; `r#type` is an identifier).
fn raw_start(s: &[char]) -> bool {
    let rest = if s[0] == 'b' { &s[1..] } else { s };
    rest.first() == Some(&'r') && rest[1..].iter().find(|&&c| c != '#') == Some(&'"')
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

/// Tokens with their line numbers (1-based).
fn tokens(code: &str) -> Vec<(Tok, usize)> {
    let s: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < s.len() {
        let c = s[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(s[start..i].iter().collect()), line));
        } else if c == ':' && s.get(i + 1) == Some(&':') {
            out.push((Tok::Path, line));
            i += 2;
        } else {
            out.push((Tok::Punct(c), line));
            i += 1;
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Paths found in one file.

/// A path as written in module `at` (`super::config::Config`), where it was, and whether it
/// was a `use` declaration that binds `binds` there.
#[derive(Debug, Clone)]
struct Found {
    at: ModPath,
    segments: Vec<String>,
    /// The name a `use` binds (its last segment or its `as` name); None for inline paths
    /// and globs.
    binds: Option<String>,
    line: usize,
}

/// Every `use` path and every path in code that starts at `crate`, `super`, `self` or a
/// name (resolved later), in the file of module `module`; `#[cfg(test)]` items skipped.
fn paths_in(module: &[String], code: &str) -> Vec<Found> {
    let toks = tokens(code);
    let mut out = Vec::new();
    // Inline modules open at brace depth d: (name, d).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let here = |inline: &[(String, usize)]| -> ModPath {
        let mut m = module.to_vec();
        m.extend(inline.iter().map(|(n, _)| n.clone()));
        m
    };
    while i < toks.len() {
        match &toks[i].0 {
            Tok::Punct('#') => {
                // An attribute: `#[…]` or `#![…]`. `#[cfg(test)]` drops the item after it.
                let mut j = i + 1;
                if toks.get(j).map(|t| &t.0) == Some(&Tok::Punct('!')) {
                    j += 1;
                }
                if toks.get(j).map(|t| &t.0) != Some(&Tok::Punct('[')) {
                    i += 1;
                    continue;
                }
                let end = matching(&toks, j, '[', ']');
                let body: Vec<&Tok> = toks[j + 1..end].iter().map(|t| &t.0).collect();
                let test_only = body
                    == [
                        &Tok::Ident("cfg".into()),
                        &Tok::Punct('('),
                        &Tok::Ident("test".into()),
                        &Tok::Punct(')'),
                    ];
                i = end + 1;
                if test_only {
                    i = skip_item(&toks, i);
                }
            }
            Tok::Punct('{') => {
                depth += 1;
                i += 1;
            }
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                i += 1;
            }
            Tok::Ident(k)
                if k == "mod"
                    && matches!(toks.get(i + 1), Some((Tok::Ident(_), _)))
                    && toks.get(i + 2).map(|t| &t.0) == Some(&Tok::Punct('{')) =>
            {
                if let Some((Tok::Ident(name), _)) = toks.get(i + 1) {
                    inline.push((name.clone(), depth));
                }
                depth += 1;
                i += 3;
            }
            Tok::Ident(k) if k == "use" => {
                let end = (i..toks.len())
                    .find(|&j| toks[j].0 == Tok::Punct(';'))
                    .unwrap_or(toks.len());
                let at = here(&inline);
                for (segments, binds) in use_tree(&toks[i + 1..end]) {
                    out.push(Found {
                        at: at.clone(),
                        segments,
                        binds,
                        line: toks[i].1,
                    });
                }
                i = end + 1;
            }
            Tok::Ident(first) => {
                // A path in code: `a::b::c` not preceded by `::` (the middle of a path) or
                // `.` (a method), whose first segment is followed by `::`.
                let starts = i == 0 || !matches!(toks[i - 1].0, Tok::Path | Tok::Punct('.'));
                if starts && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Path) {
                    let mut segments = vec![first.clone()];
                    let mut j = i + 1;
                    while toks.get(j).map(|t| &t.0) == Some(&Tok::Path) {
                        match toks.get(j + 1) {
                            Some((Tok::Ident(s), _)) => {
                                segments.push(s.clone());
                                j += 2;
                            }
                            _ => break,
                        }
                    }
                    out.push(Found {
                        at: here(&inline),
                        segments,
                        binds: None,
                        line: toks[i].1,
                    });
                    i = j;
                } else {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// The index of the token closing the bracket opened at `open`.
fn matching(toks: &[(Tok, usize)], open: usize, o: char, c: char) -> usize {
    let mut depth = 0;
    for (k, (t, _)) in toks.iter().enumerate().skip(open) {
        if *t == Tok::Punct(o) {
            depth += 1;
        } else if *t == Tok::Punct(c) {
            depth -= 1;
            if depth == 0 {
                return k;
            }
        }
    }
    toks.len().saturating_sub(1)
}

/// The index after the item starting at `i` (its further attributes, then up to its `;`
/// or its braced body, whichever comes first).
fn skip_item(toks: &[(Tok, usize)], mut i: usize) -> usize {
    while toks.get(i).map(|t| &t.0) == Some(&Tok::Punct('#')) {
        let open = i + 1;
        i = matching(toks, open, '[', ']') + 1;
    }
    let mut paren = 0i32;
    while i < toks.len() {
        match toks[i].0 {
            Tok::Punct('(') | Tok::Punct('[') => paren += 1,
            Tok::Punct(')') | Tok::Punct(']') => paren -= 1,
            Tok::Punct(';') if paren == 0 => return i + 1,
            Tok::Punct('{') if paren == 0 => return matching(toks, i, '{', '}') + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// The paths of one `use` tree (the tokens between `use` and `;`), each with the name it
/// binds (None for a glob). `a::{b, c::{self, d as e}}` gives `a::b` (b), `a::c` (c),
/// `a::c::d` (e).
fn use_tree(toks: &[(Tok, usize)]) -> Vec<(Vec<String>, Option<String>)> {
    let mut out = Vec::new();
    tree_into(toks, &mut Vec::new(), &mut out);
    out
}

fn tree_into(
    toks: &[(Tok, usize)],
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let mut segs: Vec<String> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].0 {
            Tok::Path => i += 1,
            Tok::Punct('{') => {
                let end = matching(toks, i, '{', '}');
                let base = prefix.len();
                prefix.extend(segs.iter().cloned());
                // Split the group at its top-level commas.
                let inner = &toks[i + 1..end];
                let mut start = 0;
                let mut depth = 0;
                for (k, (t, _)) in inner.iter().enumerate() {
                    match t {
                        Tok::Punct('{') => depth += 1,
                        Tok::Punct('}') => depth -= 1,
                        Tok::Punct(',') if depth == 0 => {
                            tree_into(&inner[start..k], prefix, out);
                            start = k + 1;
                        }
                        _ => {}
                    }
                }
                tree_into(&inner[start..], prefix, out);
                prefix.truncate(base);
                return;
            }
            Tok::Punct('*') => {
                let mut p = prefix.clone();
                p.extend(segs);
                out.push((p, None));
                return;
            }
            Tok::Ident(a) if a == "as" => {
                let alias = match toks.get(i + 1) {
                    Some((Tok::Ident(n), _)) if n != "_" => Some(n.clone()),
                    _ => None,
                };
                let mut p = prefix.clone();
                p.extend(segs);
                out.push((p, alias));
                return;
            }
            Tok::Ident(s) if s == "self" && segs.is_empty() && !prefix.is_empty() => {
                // `{self, …}`: the group's prefix itself.
                let name = prefix.last().cloned();
                out.push((prefix.clone(), name));
                return;
            }
            Tok::Ident(s) => {
                segs.push(s.clone());
                i += 1;
            }
            _ => i += 1,
        }
    }
    if !segs.is_empty() {
        let mut p = prefix.clone();
        p.extend(segs);
        let name = p.last().cloned();
        out.push((p, name));
    }
}

// ---------------------------------------------------------------------------------------
// The crate's modules and the edges between them.

/// `src/a/b.rs` and `src/a/b/mod.rs` → `a::b`; `src/lib.rs` → the crate root.
fn module_of(rel: &Path) -> ModPath {
    let mut m: ModPath = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(m.last().map(String::as_str), Some("mod" | "lib")) {
        m.pop();
    }
    m
}

/// Resolves paths to modules: which module defines what a path names, following `use`
/// bindings (a `pub use` re-export, or a child's `super::Name` of a parent's import).
struct Resolver {
    modules: BTreeSet<ModPath>,
    /// (module, name) → the path that `use` binds it to, as written there.
    binds: BTreeMap<(ModPath, String), (ModPath, Vec<String>)>,
}

impl Resolver {
    /// The absolute segments of `segments` written in module `at`, or None for a path
    /// outside the crate (std, a dependency) or a local name.
    fn absolute(
        &self,
        at: &[String],
        segments: &[String],
        with_binds: bool,
    ) -> Option<Vec<String>> {
        let first = segments.first()?;
        let (mut base, mut rest): (Vec<String>, &[String]) = match first.as_str() {
            "crate" => (Vec::new(), &segments[1..]),
            "super" | "self" => (at.to_vec(), segments),
            _ => {
                let mut child = at.to_vec();
                child.push(first.clone());
                if self.modules.contains(&child) {
                    (at.to_vec(), segments)
                } else if with_binds {
                    let (bat, bsegs) = self.binds.get(&(at.to_vec(), first.clone()))?;
                    let mut abs = self.absolute(bat, bsegs, false)?;
                    abs.extend(segments[1..].iter().cloned());
                    return Some(abs);
                } else {
                    return None;
                }
            }
        };
        while let Some(s) = rest.first() {
            match s.as_str() {
                "super" => {
                    base.pop()?;
                }
                "self" => {}
                _ => break,
            }
            rest = &rest[1..];
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The module defining what the absolute path `abs` names (the module itself when it
    /// names one), following bindings.
    fn home(&self, abs: &[String], hops: usize) -> ModPath {
        let k = (0..=abs.len())
            .rev()
            .find(|&k| self.modules.contains(&abs[..k]))
            .unwrap_or(0);
        let module = abs[..k].to_vec();
        if hops < 16
            && let Some(name) = abs.get(k)
            && let Some((bat, bsegs)) = self.binds.get(&(module.clone(), name.clone()))
            && let Some(mut target) = self.absolute(bat, bsegs, true)
        {
            target.extend(abs[k + 1..].iter().cloned());
            if target != abs {
                return self.home(&target, hops + 1);
            }
        }
        module
    }
}

/// The import edges of the crate whose sources are `files` (path relative to `src/`,
/// text). `main.rs` (the binary) is left out.
fn edges(files: &[(PathBuf, String)]) -> Vec<Edge> {
    let mut modules = BTreeSet::new();
    let mut found: Vec<(PathBuf, Found)> = Vec::new();
    for (rel, text) in files {
        if rel == Path::new("main.rs") {
            continue;
        }
        let m = module_of(rel);
        for f in paths_in(&m, &strip(text)) {
            modules.insert(f.at.clone());
            found.push((rel.clone(), f));
        }
        modules.insert(m);
    }
    let mut binds = BTreeMap::new();
    for (_, f) in &found {
        if let Some(name) = &f.binds {
            binds.insert(
                (f.at.clone(), name.clone()),
                (f.at.clone(), f.segments.clone()),
            );
        }
    }
    let r = Resolver { modules, binds };
    let mut out = Vec::new();
    for (rel, f) in &found {
        let Some(abs) = r.absolute(&f.at, &f.segments, true) else {
            continue;
        };
        let to = r.home(&abs, 0);
        if to != f.at {
            out.push(Edge {
                from: f.at.clone(),
                to,
                written: f.segments.join("::"),
                file: Path::new("src").join(rel),
                line: f.line,
            });
        }
    }
    out
}

/// The sibling pair an edge joins: (their parent, from, to), or None when one module
/// contains the other (a parent using its child, a child its parent).
fn siblings(e: &Edge) -> Option<(ModPath, String, String)> {
    let k = e.from.iter().zip(&e.to).take_while(|(a, b)| a == b).count();
    if k == e.from.len() || k == e.to.len() {
        return None;
    }
    Some((e.from[..k].to_vec(), e.from[k].clone(), e.to[k].clone()))
}

/// Upward imports and sibling circles among `edges`; `top` are the crate's top-level
/// modules.
fn check(edges: &[Edge], top: &BTreeSet<String>, layers: &[&[&str]]) -> Findings {
    let mut f = Findings::default();
    let layer: BTreeMap<&str, usize> = layers
        .iter()
        .enumerate()
        .flat_map(|(i, l)| l.iter().map(move |m| (*m, i)))
        .collect();
    for m in top {
        if !layer.contains_key(m.as_str()) {
            f.unlisted
                .push(format!("{m} (a module of src/, in no layer)"));
        }
    }
    for m in layer.keys() {
        if !top.contains(*m) {
            f.unlisted
                .push(format!("{m} (in a layer, not a module of src/)"));
        }
    }
    for e in edges {
        if let (Some(a), Some(b)) = (e.from.first(), e.to.first())
            && let (Some(la), Some(lb)) = (layer.get(a.as_str()), layer.get(b.as_str()))
            && lb < la
        {
            f.upward.push(e.clone());
        }
    }
    // Sibling graphs, one per parent: an edge per (from, to) with the first import seen.
    let mut graphs: BTreeMap<ModPath, BTreeMap<String, BTreeMap<String, Edge>>> = BTreeMap::new();
    for e in edges {
        if let Some((parent, a, b)) = siblings(e) {
            graphs
                .entry(parent)
                .or_default()
                .entry(a)
                .or_default()
                .entry(b)
                .or_insert_with(|| e.clone());
        }
    }
    for (parent, g) in &graphs {
        for scc in components(g) {
            if scc.len() > 1 {
                let (names, steps) = circle_in(g, &scc);
                f.circles.push((parent.clone(), names, steps));
            }
        }
    }
    f
}

/// Strongly connected components (Tarjan), each sorted.
fn components(g: &BTreeMap<String, BTreeMap<String, Edge>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeMap<String, Edge>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let g = t.g;
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        if let Some(next) = g.get(v) {
            for w in next.keys() {
                if !t.index.contains_key(w.as_str()) {
                    visit(t, w);
                    let lw = t.low[w.as_str()];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if t.on.contains(w.as_str()) {
                    let iw = t.index[w.as_str()];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
        }
        if t.low[v] == t.index[v] {
            let mut c = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                c.push(w.to_string());
                if w == v {
                    break;
                }
            }
            c.sort();
            t.out.push(c);
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    let nodes: BTreeSet<&str> = g
        .iter()
        .flat_map(|(a, b)| std::iter::once(a.as_str()).chain(b.keys().map(String::as_str)))
        .collect();
    for v in nodes {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

/// One circle through the component's first module (shortest, by breadth-first search
/// inside the component): its modules in order and the import behind each step.
fn circle_in(
    g: &BTreeMap<String, BTreeMap<String, Edge>>,
    scc: &[String],
) -> (Vec<String>, Vec<Edge>) {
    let inside: BTreeSet<&str> = scc.iter().map(String::as_str).collect();
    let start = scc[0].as_str();
    let mut prev: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    let mut last = None;
    'search: while let Some(v) = queue.pop_front() {
        for w in g.get(v).into_iter().flat_map(|n| n.keys()) {
            let w = w.as_str();
            if w == start {
                last = Some(v);
                break 'search;
            }
            if inside.contains(w) && !prev.contains_key(w) {
                prev.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    let mut names = vec![start.to_string()];
    if let Some(mut v) = last {
        let mut back = vec![v];
        while v != start {
            v = prev[v];
            back.push(v);
        }
        back.pop();
        names.extend(back.into_iter().rev().map(str::to_string));
    }
    names.push(start.to_string());
    let steps = names.windows(2).map(|w| g[&w[0]][&w[1]].clone()).collect();
    (names, steps)
}

// ---------------------------------------------------------------------------------------
// The repository.

fn sources(dir: &Path, base: &Path, out: &mut Vec<(PathBuf, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            sources(&p, base, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&p).unwrap();
            out.push((p.strip_prefix(base).unwrap().to_path_buf(), text));
        }
    }
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The layers ARCHITECTURE.md's module map draws: each line of its first code block that
/// starts at the left edge, read as the top-level module names it opens with (`burn/
/// oltp/ …`), up to the first word that names none.
fn architecture_layers(doc: &str, top: &BTreeSet<String>) -> Vec<Vec<String>> {
    let map = doc
        .split("## Module map")
        .nth(1)
        .expect("ARCHITECTURE.md has a `## Module map` section");
    let block = map
        .split("```")
        .nth(1)
        .expect("the module map is a code block");
    block
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.trim().is_empty())
        .map(|l| {
            l.split_whitespace()
                .map(|w| w.trim_end_matches('/'))
                .take_while(|w| top.contains(*w))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn no_module_imports_a_higher_layer_and_no_siblings_import_each_other() {
    let src = repo().join("src");
    let mut files = Vec::new();
    sources(&src, &src, &mut files);
    let top: BTreeSet<String> = files
        .iter()
        .filter(|(p, _)| p != Path::new("main.rs") && p != Path::new("lib.rs"))
        .filter_map(|(p, _)| module_of(p).first().cloned())
        .collect();
    let edges = edges(&files);
    assert!(
        edges.len() > 500,
        "the scan found only {} imports: is it reading src/?",
        edges.len()
    );
    let f = check(&edges, &top, LAYERS);

    let doc = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap();
    let drawn = architecture_layers(&doc, &top);
    let declared: Vec<Vec<String>> = LAYERS
        .iter()
        .map(|l| l.iter().map(|s| s.to_string()).collect())
        .collect();
    let sorted = |v: &[Vec<String>]| -> Vec<Vec<String>> {
        v.iter()
            .map(|l| {
                let mut l = l.clone();
                l.sort();
                l
            })
            .collect()
    };

    let mut report = String::new();
    if !f.unlisted.is_empty() {
        report += "Top-level modules and LAYERS (tests/layering.rs) disagree:\n";
        for m in &f.unlisted {
            report += &format!("  {m}\n");
        }
    }
    if sorted(&drawn) != sorted(&declared) {
        report += &format!(
            "ARCHITECTURE.md's module map draws the layers\n  {drawn:?}\nbut LAYERS \
             (tests/layering.rs) declares\n  {declared:?}\n"
        );
    }
    if !f.upward.is_empty() {
        report += &format!(
            "{} import(s) from a lower layer into a higher one (layers: LAYERS in \
             tests/layering.rs):\n",
            f.upward.len()
        );
        for e in &f.upward {
            report += &format!("  {e}\n");
        }
    }
    if !f.circles.is_empty() {
        report += &format!(
            "{} circle(s) between sibling modules (move what both need into the lower one \
             or a small module of its own):\n",
            f.circles.len()
        );
        for (parent, names, steps) in &f.circles {
            report += &format!("  in {}: {}\n", show(parent), names.join(" → "));
            for e in steps {
                report += &format!("    {e}\n");
            }
        }
    }
    assert!(report.is_empty(), "\n{report}");
    println!(
        "{} imports between modules: 0 upward, 0 circles",
        edges.len()
    );
}

// ---------------------------------------------------------------------------------------
// The checker itself, on small made-up crates.

fn crate_of(files: &[(&str, &str)]) -> (Vec<Edge>, BTreeSet<String>) {
    let files: Vec<(PathBuf, String)> = files
        .iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect();
    let top = files
        .iter()
        .filter(|(p, _)| p != Path::new("lib.rs"))
        .filter_map(|(p, _)| module_of(p).first().cloned())
        .collect();
    (edges(&files), top)
}

#[test]
fn a_circle_between_two_top_level_modules_is_found_and_named() {
    // error ↔ interrupt as they were: each named an item of the other.
    let (edges, top) = crate_of(&[
        ("lib.rs", "pub mod error;\npub mod interrupt;\n"),
        (
            "error.rs",
            "//! Errors. [`crate::interrupt`] is only a doc link.\n\
             pub struct Interrupted;\n\
             fn f() { let _ = crate::interrupt::signal(); }\n",
        ),
        (
            "interrupt.rs",
            "pub fn signal() {}\n\
             pub fn check() -> Result<(), crate::error::Interrupted> { todo!() }\n\
             #[cfg(test)]\nmod tests { use crate::error::*; }\n",
        ),
    ]);
    let f = check(&edges, &top, &[&["error", "interrupt"]]);
    assert!(f.upward.is_empty() && f.unlisted.is_empty(), "{f:?}");
    assert_eq!(f.circles.len(), 1, "{f:?}");
    let (parent, names, steps) = &f.circles[0];
    assert!(parent.is_empty());
    assert_eq!(names, &["error", "interrupt", "error"]);
    assert_eq!(steps[0].line, 3, "the doc link on line 1 is not an import");
    assert_eq!(steps[1].written, "crate::error::Interrupted");
}

#[test]
fn a_circle_inside_a_folder_is_found_through_super_and_a_parents_reexport() {
    // compare/config ↔ compare/fake as they were, one side through the parent's `pub use`.
    let (edges, top) = crate_of(&[
        ("lib.rs", "pub mod compare;\n"),
        (
            "compare/mod.rs",
            "pub mod config;\npub mod fake;\npub use config::{Config, Variant};\n",
        ),
        (
            "compare/config.rs",
            "pub struct Config { pub fake: super::fake::Behaviour }\npub struct Variant;\n",
        ),
        (
            "compare/fake.rs",
            "use super::Config;\npub struct Behaviour;\nfn run(c: &Config) {}\n",
        ),
    ]);
    let f = check(&edges, &top, &[&["compare"]]);
    assert_eq!(f.circles.len(), 1, "{f:?}");
    let (parent, names, _) = &f.circles[0];
    assert_eq!(parent, &["compare"]);
    assert_eq!(names, &["config", "fake", "config"]);
}

#[test]
fn an_import_from_a_lower_layer_is_reported_and_one_from_a_higher_is_not() {
    let (edges, top) = crate_of(&[
        ("lib.rs", "pub mod report;\npub mod study;\n"),
        ("report/mod.rs", "pub mod verdict;\n"),
        (
            "report/verdict.rs",
            "use crate::study::{self, phases::compare as c};\n\
             fn f() { let s = r#\"crate::study::x\"#; c::complete_rounds(); }\n",
        ),
        (
            "study/mod.rs",
            "pub mod phases;\nuse crate::report::verdict;\n",
        ),
        ("study/phases/mod.rs", "pub mod compare;\n"),
        ("study/phases/compare.rs", "pub fn complete_rounds() {}\n"),
    ]);
    let f = check(&edges, &top, &[&["study"], &["report"]]);
    let up: Vec<String> = f
        .upward
        .iter()
        .map(|e| format!("{} {}", show(&e.to), e.line))
        .collect();
    assert_eq!(
        up,
        [
            "study 1",
            "study::phases::compare 1",
            "study::phases::compare 2"
        ],
        "{f:?}"
    );
    assert!(
        f.circles.len() == 1,
        "report ↔ study is also a circle: {f:?}"
    );
}

#[test]
fn paths_skip_comments_strings_chars_and_test_items() {
    let code = strip(
        "use a::b; // crate::x\n/* crate::y /* nested */ crate::z */\nlet c = '\"'; let s = \"crate::w\";\n\
         fn f<'a>(x: &'a str) { crate::v::f(); }\n#[cfg(test)]\nfn g() { crate::t::f(); }\n",
    );
    let found: Vec<String> = paths_in(&[], &code)
        .into_iter()
        .map(|f| f.segments.join("::"))
        .collect();
    assert_eq!(found, ["a::b", "crate::v::f"]);
    let tree: Vec<(String, Option<String>)> = use_tree(&tokens("a::{b, c::{self, d as e}, f::*}"))
        .into_iter()
        .map(|(p, n)| (p.join("::"), n))
        .collect();
    assert_eq!(
        tree,
        [
            ("a::b".to_string(), Some("b".to_string())),
            ("a::c".to_string(), Some("c".to_string())),
            ("a::c::d".to_string(), Some("e".to_string())),
            ("a::f".to_string(), None),
        ]
    );
}
