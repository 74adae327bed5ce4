//! Terminal escaping: text from a file (a results.json's host name, CPU model or kernel, a
//! directory name) shown on a terminal must not run as a terminal command. An escape
//! character (ESC, `\x1b`) starts an ANSI/ECMA-48 control sequence that can set the window
//! title, clear the screen or move the cursor; a carriage return overwrites the line; a C1
//! control (U+0080–U+009F) is an escape sequence of its own on some terminals (ECMA-48
//! §5.3); and the Unicode bidirectional overrides and isolates reorder what follows them
//! (Unicode UAX #9; CVE-2021-42574, "Trojan Source"). Each is shown as its escape instead:
//! `\x1b`, `\r`, `\u{202e}`.
//!
//! The terminal writer, [`draw`]: a document's [`Block`]s as the text a command prints. Headings
//! start at the margin with a blank line before them, what follows a heading is indented
//! two spaces, and folded detail sits two more below its summary line (the terminal has
//! no `<details>`: it shows everything). Charts are left out; their tables carry the
//! numbers.
//!
//! A table with no headings and two columns is a list of labels and values: the labels of
//! every such table in one document share one width, so every section's values start in
//! one column. Other tables are [`Table::text`], indented.

use super::blocks::Block;
use super::table::{NONE, Table};
use std::fmt::Write;

/// The escape shown for `c`, or None when it is printed as it is. Line breaks and tabs are
/// escaped too: a field is one line.
fn escape(c: char) -> Option<String> {
    match c {
        '\n' => Some("\\n".into()),
        '\r' => Some("\\r".into()),
        '\t' => Some("\\t".into()),
        c if (c as u32) < 0x20 || (0x7f..=0x9f).contains(&(c as u32)) => {
            Some(format!("\\x{:02x}", c as u32))
        }
        '\u{061c}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}' => Some(format!("\\u{{{:x}}}", c as u32)),
        _ => None,
    }
}

/// True when `c` is something [`field`] escapes.
pub fn is_unsafe(c: char) -> bool {
    escape(c).is_some()
}

/// One value (a host name, a path, a reason) for a terminal: every control character,
/// line breaks included, and every bidirectional control shown as its escape.
pub fn field(s: &str) -> String {
    if !s.chars().any(is_unsafe) {
        return s.to_string();
    }
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match escape(c) {
            Some(e) => o.push_str(&e),
            None => o.push(c),
        }
    }
    o
}

/// Many lines for a terminal: as [`field`], but line breaks are kept (tabs too).
pub fn text(s: &str) -> String {
    if !s.chars().any(|c| c != '\n' && c != '\t' && is_unsafe(c)) {
        return s.to_string();
    }
    s.split('\n')
        .map(|l| l.split('\t').map(field).collect::<Vec<_>>().join("\t"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The document as terminal text, every piece of text from the model through [`field`]
/// (a process name or a file's contents can hold control characters).
pub fn draw(blocks: &[Block]) -> String {
    let mut o = String::new();
    let width = label_width(blocks);
    write(&mut o, blocks, 0, width);
    o
}

fn is_pairs(t: &Table) -> bool {
    t.header.len() == 2 && t.header.iter().all(|h| h.is_empty())
}

/// The widest label of the document's label–value tables, folded ones included.
fn label_width(blocks: &[Block]) -> usize {
    blocks
        .iter()
        .map(|b| match b {
            Block::Table(t) if is_pairs(t) => t
                .rows
                .iter()
                .filter_map(|r| r.first())
                .map(|k| field(k).chars().count())
                .max()
                .unwrap_or(0),
            Block::Folded { blocks, .. } => label_width(blocks),
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

fn write(o: &mut String, blocks: &[Block], base: usize, width: usize) {
    let mut indent = base;
    for b in blocks {
        let pad = " ".repeat(indent);
        match b {
            Block::Heading(h) => {
                if !o.is_empty() {
                    o.push('\n');
                }
                let _ = writeln!(o, "{}{}", " ".repeat(base), field(h));
                indent = base + 2;
            }
            Block::Intro(t) | Block::Key(t) | Block::Note(t) | Block::Subheading(t) => {
                let _ = writeln!(o, "{pad}{}", field(t));
            }
            Block::List(items) => {
                for l in items {
                    let _ = writeln!(o, "{pad}{}", field(l));
                }
            }
            Block::Terms(terms) => {
                for t in terms {
                    let _ = writeln!(o, "{pad}{}: {}", field(&t.label), field(&t.observed));
                    let _ = writeln!(o, "{pad}  {}", field(&t.meaning));
                }
            }
            Block::Table(t) if is_pairs(t) => {
                for r in &t.rows {
                    let cell = |i: usize| match r.get(i).map(String::as_str) {
                        Some(NONE) => "-".to_string(),
                        Some(c) => field(c),
                        None => String::new(),
                    };
                    let _ = writeln!(o, "{pad}{:<width$} {}", cell(0), cell(1));
                }
            }
            Block::Table(t) => {
                let mut t = t.clone();
                t.header = t.header.iter().map(|h| field(h)).collect();
                for r in &mut t.rows {
                    for c in r.iter_mut() {
                        *c = field(c);
                    }
                }
                let text = t.text();
                let skip = usize::from(t.header.iter().all(|h| h.is_empty()));
                for l in text.lines().skip(skip) {
                    let _ = writeln!(o, "{pad}{l}");
                }
            }
            Block::Chart(_) => {}
            Block::Folded { summary, blocks } => {
                let _ = writeln!(o, "{pad}{}:", field(summary));
                write(o, blocks, indent + 2, width);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{field, text};

    #[test]
    fn control_characters_show_as_escapes() {
        // Set the window title, clear the screen, overwrite the line, a C1 CSI, a bell.
        assert_eq!(
            field("h1\x1b]0;pwned\x07\x1b[2J\rx\u{9b}1m"),
            "h1\\x1b]0;pwned\\x07\\x1b[2J\\rx\\x9b1m"
        );
        assert_eq!(field("a\nb\tc\x7f"), "a\\nb\\tc\\x7f");
        assert_eq!(field("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(field("Xeon® Gold 6248 — ok"), "Xeon® Gold 6248 — ok");
        assert_eq!(
            text("one\x1b[31m\ntwo\tthree\r"),
            "one\\x1b[31m\ntwo\tthree\\r"
        );
        for s in ["", "plain", "a\nb"] {
            assert_eq!(text(s), s);
        }
    }
}

#[cfg(test)]
mod draw_tests {
    use super::*;
    use crate::render::blocks::Term;

    fn pairs(rows: &[(&str, &str)]) -> Table {
        let mut t = Table::new(&["", ""]);
        for (k, v) in rows {
            t.push(vec![k.to_string(), v.to_string()]);
        }
        t
    }

    /// A process name or a file's contents can hold control characters: each piece of a
    /// document is escaped before it is laid out, so widths count what is printed.
    #[test]
    fn model_text_is_escaped_before_it_is_laid_out() {
        let mut oom = Table::new(&["pid", "name"]);
        oom.push(vec!["1".into(), "x\x1b]0;pwned\x07".into()]);
        let doc = vec![
            Block::Heading("OOM\x1b[2J".into()),
            Block::Table(pairs(&[("cgroup", "v2 /a\rb")])),
            Block::Table(oom),
        ];
        let out = draw(&doc);
        assert!(!out.contains('\x1b') && !out.contains('\r'), "{out:?}");
        assert_eq!(
            out,
            "OOM\\x1b[2J\n  cgroup v2 /a\\rb\n  pid  name\n    1  x\\x1b]0;pwned\\x07\n"
        );
    }

    #[test]
    fn sections_indent_and_labels_share_one_column() {
        let mut wide = Table::new(&["pid", "RSS"]);
        wide.push(vec!["7".into(), "1 GiB".into()]);
        let doc = vec![
            Block::Intro("read under /x".into()),
            Block::Heading("One".into()),
            Block::Table(pairs(&[("a", "1"), ("longer key", "2")])),
            Block::Heading("Two".into()),
            Block::Table(pairs(&[("b", NONE)])),
            Block::Folded {
                summary: "most at risk".into(),
                blocks: vec![Block::Table(wide)],
            },
            Block::Chart("<svg/>".into()),
            Block::Heading("Findings".into()),
            Block::Terms(vec![Term {
                label: "warn".into(),
                observed: "seen".into(),
                meaning: "means".into(),
            }]),
            Block::List(vec!["nothing else".into()]),
        ];
        assert_eq!(
            draw(&doc),
            "read under /x\n\nOne\n  a          1\n  longer key 2\n\nTwo\n  b          -\n  \
             most at risk:\n    pid  RSS\n      7  1 GiB\n\nFindings\n  warn: seen\n    means\n  \
             nothing else\n"
        );
    }
}
