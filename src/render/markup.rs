//! The writers for the markup formats, one each for every page and file: the HTML page
//! skeleton ([`page_start`], [`page_end`]) and the stylesheets it carries, the HTML table
//! ([`html_table`]) and the Markdown table ([`md_table`]). `report.html`, `summary.md`,
//! `fleet.html`, `fleet.md` and `--export-markdown` all draw their tables through these
//! two, as hyperfine's `MarkupExporter` draws one table for every markup format
//! (`src/export/markup.rs` there). A table is a [`Table`] of plain text; how a column is
//! marked up is its [`Column`]. Every field goes through the format's one escaper:
//! [`super::svg::esc`] for HTML, [`super::markdown::cell`] for Markdown.

use super::markdown::cell;
use super::svg::esc;
use super::table::Table;
use std::fmt::Write;

/// The study page's stylesheet (`report.html`).
pub const CSS_STUDY: &str = "body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#1a1a1a;line-height:1.45}
h1{margin-bottom:.2em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
.meta{color:#555}.banner{padding:.6em 1em;border-radius:6px;margin:1em 0;font-weight:600}
.synthetic{background:#fff3cd;border:1px solid #e0c060}.partial{background:#fde2e1;border:1px solid #d9534f}
#verdict{background:#f3f8ff;border:1px solid #b8d0f0;border-radius:8px;padding:.2em 1.2em 1em}
#verdict h2{border:none}.headline{font-size:1.1em}
.answers .keephton strong{color:#17702a}.answers .turnhtoff strong{color:#b3261e}.answers .inconclusive strong,.answers .notmeasured strong{color:#6b6b6b}.answers strong{white-space:nowrap}
dt{font-weight:700;margin-top:.8em}dd{margin-left:1em}dd p{margin:.3em 0}
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}th,td{border:1px solid #ddd;padding:.25em .55em;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.chart{display:block;margin:.8em 0;max-width:100%;height:auto}.note{color:#555;font-size:.9em}
code{background:#f2f2f2;padding:0 .25em;border-radius:3px;font-size:.92em}details{margin:.5em 0}summary{cursor:pointer;color:#0b5394}footer{margin-top:3em;color:#777;font-size:.85em}
";

/// The fleet page's stylesheet (`fleet.html`): wider, answer cells coloured by answer.
pub const CSS_FLEET: &str = "body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#1a1a1a;line-height:1.45}
h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}.meta{color:#555}
.banner{padding:.6em 1em;border-radius:6px;margin:1em 0;font-weight:600;background:#fff3cd;border:1px solid #e0c060}
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}th,td{border:1px solid #ddd;padding:.25em .55em;text-align:left;vertical-align:top}
th{background:#f4f4f4}.headline{background:#f3f8ff;border:1px solid #b8d0f0;border-radius:8px;padding:.6em 1em}
td.keep-ht-on{color:#17702a;font-weight:700}td.turn-ht-off{color:#b3261e;font-weight:700}td.small-loss{color:#b35c00;font-weight:700}td.inconclusive,td.not-measured,td.depends-on-workload{color:#6b6b6b}
td.keep-ht-on,td.turn-ht-off,td.small-loss,td.inconclusive,td.not-measured{white-space:nowrap}
code{background:#f2f2f2;padding:0 .25em;border-radius:3px}details{margin:.5em 0}summary{cursor:pointer;color:#0b5394}footer{margin-top:3em;color:#777;font-size:.85em}
";

/// Opens a self-contained page (inline stylesheet, no scripts, no network): the doctype,
/// the head with `title` and `css`, and `<body>`.
pub fn page_start(o: &mut String, title: &str, css: &str) {
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>\n{css}</style>\n</head>\n<body>\n",
        esc(title)
    );
}

/// Closes a page opened by [`page_start`] after its footer, which is HTML already.
pub fn page_end(o: &mut String, footer_html: &str) {
    let _ = writeln!(o, "<footer>{footer_html}</footer>\n</body>\n</html>");
}

/// Escapes text and turns `backticked` spans into `<code>`; an odd number of backticks
/// leaves them all literal.
pub fn inline(text: &str) -> String {
    if text.matches('`').count() % 2 == 1 {
        return esc(text);
    }
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            out.push_str("<code>");
            out.push_str(&esc(part));
            out.push_str("</code>");
        } else {
            out.push_str(&esc(part));
        }
    }
    out
}

/// How one column's cells are marked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Column {
    /// Escaped text.
    #[default]
    Text,
    /// Escaped text, `backticked` spans as code ([`inline`]).
    Code,
    /// A figure (a cell starting with a digit and holding no space, or ending in `×`)
    /// right-aligned in HTML; other cells as [`Column::Code`].
    Auto,
    /// Escaped text in bold: the answer a row gives.
    Strong,
    /// In HTML a link to the section of that id on the same page; `-` stays text.
    Anchor,
}

/// A class for a cell, by its column and its text (None: no class).
pub type CellClass<'a> = &'a dyn Fn(usize, &str) -> Option<String>;

/// How [`html_table`] marks a table up: the table's class, each column's [`Column`]
/// (columns past `columns` take `rest`), a class for each row (by index) and for a cell
/// (by column and text).
#[derive(Clone, Copy)]
pub struct HtmlStyle<'a> {
    pub class: Option<&'a str>,
    pub columns: &'a [Column],
    pub rest: Column,
    pub row_class: Option<&'a dyn Fn(usize) -> String>,
    pub cell_class: Option<CellClass<'a>>,
}

impl HtmlStyle<'_> {
    /// Every cell escaped text.
    pub const TEXT: HtmlStyle<'static> = HtmlStyle {
        class: None,
        columns: &[],
        rest: Column::Text,
        row_class: None,
        cell_class: None,
    };
    /// Figures right-aligned, code spans in the rest: a report section's tables.
    pub const AUTO: HtmlStyle<'static> = HtmlStyle {
        rest: Column::Auto,
        ..HtmlStyle::TEXT
    };
}

fn is_figure(c: &str) -> bool {
    c.starts_with(|ch: char| ch.is_ascii_digit()) && !c.contains(' ') || c.ends_with('×')
}

/// A table as HTML. The header row is left out when every heading is empty (a table of
/// label–value pairs).
pub fn html_table(o: &mut String, t: &Table, style: &HtmlStyle<'_>) {
    match style.class {
        Some(c) => {
            let _ = writeln!(o, "<table class=\"{}\">", esc(c));
        }
        None => o.push_str("<table>\n"),
    }
    if t.header.iter().any(|h| !h.is_empty()) {
        o.push_str("<tr>");
        for h in &t.header {
            let _ = write!(o, "<th>{}</th>", esc(h));
        }
        o.push_str("</tr>\n");
    }
    for (ri, row) in t.rows.iter().enumerate() {
        match style.row_class.map(|f| f(ri)) {
            Some(c) => {
                let _ = write!(o, "<tr class=\"{}\">", esc(&c));
            }
            None => o.push_str("<tr>"),
        }
        for (ci, c) in row.iter().enumerate() {
            let mut class = style.cell_class.and_then(|f| f(ci, c));
            let body = match style.columns.get(ci).copied().unwrap_or(style.rest) {
                Column::Text => esc(c),
                Column::Code => inline(c),
                Column::Auto if is_figure(c) => {
                    class.get_or_insert_with(|| "num".into());
                    esc(c)
                }
                Column::Auto => inline(c),
                Column::Strong => format!("<strong>{}</strong>", esc(c)),
                Column::Anchor if c == "-" || c.is_empty() => esc(c),
                Column::Anchor => format!("<a href=\"#{0}\">{0}</a>", esc(c)),
            };
            match class {
                Some(k) => {
                    let _ = write!(o, "<td class=\"{}\">{body}</td>", esc(&k));
                }
                None => {
                    let _ = write!(o, "<td>{body}</td>");
                }
            }
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n");
}

/// A table as GitHub-flavoured Markdown, every cell through [`cell`], then a blank line.
/// Headings that are all empty stay empty (GFM needs a header row).
pub fn md_table(o: &mut String, t: &Table) {
    md_table_with(o, t, &[]);
}

/// [`md_table`] with columns marked up: [`Column::Strong`] in bold; the others as text.
pub fn md_table_with(o: &mut String, t: &Table, columns: &[Column]) {
    let header: Vec<String> = t.header.iter().map(|h| cell(h)).collect();
    let _ = writeln!(o, "| {} |", header.join(" | "));
    let _ = writeln!(o, "|{}|", vec!["---"; header.len()].join("|"));
    for r in &t.rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| match columns.get(i) {
                Some(Column::Strong) => format!("**{}**", cell(c)),
                _ => cell(c),
            })
            .collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
    o.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> Table {
        let mut t = Table::new(&["what", "ratio", "why"]);
        t.push(vec!["a <b>".into(), "1.31×".into(), "see `x|y`".into()]);
        t.push(vec!["c".into(), "12".into(), "-".into()]);
        t
    }

    #[test]
    fn one_html_table_for_every_page() {
        let mut o = String::new();
        html_table(&mut o, &t(), &HtmlStyle::TEXT);
        assert_eq!(
            o,
            "<table>\n<tr><th>what</th><th>ratio</th><th>why</th></tr>\n\
             <tr><td>a &lt;b&gt;</td><td>1.31×</td><td>see `x|y`</td></tr>\n\
             <tr><td>c</td><td>12</td><td>-</td></tr>\n</table>\n"
        );
        let mut o = String::new();
        html_table(&mut o, &t(), &HtmlStyle::AUTO);
        assert!(o.contains("<td class=\"num\">1.31×</td>"), "{o}");
        assert!(o.contains("<td>see <code>x|y</code></td>"), "{o}");
        let rows = |i: usize| format!("row{i}");
        let answer = |c: usize, s: &str| (c == 0 && s == "c").then(|| "hit".to_string());
        let style = HtmlStyle {
            class: Some("answers"),
            columns: &[Column::Strong, Column::Text, Column::Anchor],
            row_class: Some(&rows),
            cell_class: Some(&answer),
            ..HtmlStyle::TEXT
        };
        let mut o = String::new();
        html_table(&mut o, &t(), &style);
        assert!(o.starts_with("<table class=\"answers\">\n"), "{o}");
        assert!(
            o.contains("<tr class=\"row1\"><td class=\"hit\"><strong>c</strong></td>"),
            "{o}"
        );
        assert!(o.contains("<a href=\"#see `x|y`\">"), "{o}");
        assert!(
            o.contains("<td>-</td></tr>"),
            "an absent section is no link: {o}"
        );
    }

    #[test]
    fn headings_all_empty_draw_no_html_header_and_an_empty_markdown_one() {
        let mut t = Table::new(&["", ""]);
        t.push(vec!["CPU".into(), "x".into()]);
        let mut o = String::new();
        html_table(&mut o, &t, &HtmlStyle::AUTO);
        assert!(!o.contains("<th>"), "{o}");
        let mut o = String::new();
        md_table(&mut o, &t);
        assert_eq!(o, "|  |  |\n|---|---|\n| CPU | x |\n\n");
    }

    #[test]
    fn markdown_cells_are_escaped_and_strong_columns_bold() {
        let mut o = String::new();
        md_table_with(&mut o, &t(), &[Column::Strong]);
        assert_eq!(
            o,
            "| what | ratio | why |\n|---|---|---|\n\
             | **a &lt;b&gt;** | 1.31× | see `x\\|y` |\n| **c** | 12 | - |\n\n"
        );
    }

    #[test]
    fn inline_code_spans_are_escaped() {
        assert_eq!(inline("a `<b>` c"), "a <code>&lt;b&gt;</code> c");
        assert_eq!(inline("odd ` tick"), "odd ` tick");
        assert_eq!(inline("plain & simple"), "plain &amp; simple");
    }

    #[test]
    fn a_page_is_self_contained() {
        let mut o = String::new();
        page_start(&mut o, "a <title>", "p{}\n");
        page_end(&mut o, "made by <code>x</code>");
        assert!(o.starts_with("<!DOCTYPE html>\n"));
        assert!(o.contains("<title>a &lt;title&gt;</title>\n<style>\np{}\n</style>"));
        assert!(o.ends_with("<footer>made by <code>x</code></footer>\n</body>\n</html>\n"));
        assert!(!o.contains("<script"));
    }
}
