//! Markdown escaping shared by every Markdown output (`summary.md`, `compare
//! --export-markdown`). Strings from the model (a hostname, a database URL, an `--out`
//! path, the user's command, a placement label) must show as text, never run as HTML in a
//! viewer that renders inline HTML.
//!
//! Code spans follow CommonMark 0.31 §6.1: a backtick string opens a span only when a
//! backtick string of the same length closes it, and a backslash-escaped backtick (§2.4)
//! opens nothing. A span is kept verbatim only when it does not cross a line break, since a
//! blank line would end the paragraph (and the span) first; anything else is escaped.
//!
//! A value is one piece of inline text wherever it lands: its line breaks become spaces
//! (a `--db` path holding `\n# x` once started a heading in `summary.md`, and a line
//! break in a table cell split the row), `[` and `]` are escaped so that nothing in it is
//! a link or image (`[x](javascript:…)` passed through, §6.3, §6.4), and a leading `#` or
//! `>` is escaped so that a value starting a line starts no heading or quote (§4.2, §5.1).
//!
//! GitHub's Markdown also makes links of bare text (GFM 0.29 §6.9, autolinks extension):
//! `www.` plus a domain, `http://` and `https://` URLs, and e-mail addresses. A value never
//! becomes a link, so `://`'s colon, the dot of `www.` and `@` are backslash-escaped
//! (§2.4: any ASCII punctuation may be), which the autolink scanner does not match.
//!
//! Control characters (ESC, a carriage return, C1 controls, bidirectional overrides) are
//! shown as their escapes (`\x1b`), as on a terminal ([`super::terminal`]), in text and in
//! code spans alike: a viewer or a `cat` of the file would otherwise run them.

/// Text as Markdown: line breaks turned into spaces; `<`, `>`, `&`, `\`, `[` and `]`
/// escaped outside code spans (which are literal in Markdown, so they are left alone), and a
/// leading `#` or `>` escaped.
pub fn md(text: &str) -> String {
    let one_line = visible(text);
    let text = one_line.as_str();
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    // `start` is where the text not yet copied begins; only ASCII bytes are inspected, so
    // every slice boundary is a char boundary.
    let mut start = 0;
    let flush = |out: &mut String, s: &str| {
        let mut prev: [char; 3] = [' '; 3];
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            let www = prev.iter().all(|p| p.eq_ignore_ascii_case(&'w'));
            prev = [prev[1], prev[2], c];
            match c {
                // Autolinks (GFM §6.9): `http://`, `www.`, `user@host`.
                ':' if chars.peek() == Some(&'/') => out.push_str("\\:"),
                '.' if www => out.push_str("\\."),
                '@' => out.push_str("\\@"),
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                // A backslash of the value's own would escape the escape that follows it
                // (`\]` becoming `\\]`, a literal backslash and a bare bracket).
                '\\' => out.push_str("\\\\"),
                '[' => out.push_str("\\["),
                ']' => out.push_str("\\]"),
                '#' if out.trim_start().is_empty() => out.push_str("\\#"),
                c => out.push(c),
            }
        }
    };
    while i < b.len() {
        match b[i] {
            b'\\' if b.get(i + 1) == Some(&b'`') => {
                // An escaped backtick is a literal backtick, never an opener.
                flush(&mut out, &text[start..i]);
                out.push_str("\\`");
                i += 2;
                start = i;
            }
            b'`' => {
                let n = run_len(b, i);
                let close = closing_run(b, i + n, n);
                flush(&mut out, &text[start..i]);
                match close {
                    Some(end) => {
                        out.push_str(&text[i..end]);
                        i = end;
                    }
                    None => {
                        out.push_str(&text[i..i + n]);
                        i += n;
                    }
                }
                start = i;
            }
            _ => i += 1,
        }
    }
    flush(&mut out, &text[start..]);
    out
}

/// A table cell: [`md`], then `|` escaped (GFM tables split on it, even inside code
/// spans) and line breaks turned into spaces (a row is one line).
pub fn cell(s: &str) -> String {
    md(s).replace('|', "\\|").replace(['\r', '\n'], " ")
}

/// `s` as one code span: fenced with one backtick more than its longest backtick run,
/// padded with a space when it starts or ends with a backtick (CommonMark 0.31 §6.1), line
/// breaks turned into spaces. Its content then shows literally, whatever it holds.
pub fn code(s: &str) -> String {
    let s = visible(s);
    let b = s.as_bytes();
    let mut longest = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'`' {
            let n = run_len(b, i);
            longest = longest.max(n);
            i += n;
        } else {
            i += 1;
        }
    }
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// `text` on one line with its control characters visible: line breaks and tabs become
/// spaces, every other control character its escape ([`super::terminal::field`]).
fn visible(text: &str) -> String {
    let one_line = text.replace("\r\n", " ").replace(['\r', '\n', '\t'], " ");
    super::terminal::field(&one_line)
}

fn run_len(b: &[u8], i: usize) -> usize {
    b[i..].iter().take_while(|&&c| c == b'`').count()
}

/// The end of the first backtick run of exactly `n` at or after `from`, before any line
/// break.
fn closing_run(b: &[u8], from: usize, n: usize) -> Option<usize> {
    let mut j = from;
    while j < b.len() {
        match b[j] {
            b'\n' | b'\r' => return None,
            b'`' => {
                let m = run_len(b, j);
                if m == n {
                    return Some(j + m);
                }
                j += m;
            }
            _ => j += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{cell, code, md};

    #[test]
    fn html_in_text_is_escaped_but_code_spans_are_kept() {
        assert_eq!(
            md("host <img src=x onerror=alert(1)> & co"),
            "host &lt;img src=x onerror=alert(1)&gt; &amp; co"
        );
        assert_eq!(md("use `a<b` here <b>"), "use `a<b` here &lt;b&gt;");
        // A lone backtick is literal, and what follows it is still escaped.
        assert_eq!(md("odd ` <x>"), "odd ` &lt;x&gt;");
    }

    #[test]
    fn only_real_code_spans_are_left_alone() {
        // "```" finds no closing "```": literal, and the text after it is text.
        assert_eq!(md("```<img>`"), "```&lt;img&gt;`");
        // An escaped backtick opens nothing.
        assert_eq!(md("\\`<img>`"), "\\`&lt;img&gt;`");
        // Runs match by length: "``a`<b>`c``" is one span.
        assert_eq!(md("``a`<b>`c``"), "``a`<b>`c``");
        // A value is one line: a span across its line break is a span on that line.
        assert_eq!(md("`a\n\n<img>`"), "`a  <img>`");
    }

    #[test]
    fn a_value_is_one_line_of_text_without_links() {
        assert_eq!(md("out\n# heading\r\n| a | b |"), "out # heading | a | b |");
        assert_eq!(md("# top"), "\\# top");
        assert_eq!(md("> quote"), "&gt; quote");
        assert_eq!(
            md("[x](javascript:alert(1)) ![i](y)"),
            "\\[x\\](javascript:alert(1)) !\\[i\\](y)"
        );
        // The value's own backslash cannot undo an escape.
        assert_eq!(md("\\[x\\](y)"), "\\\\\\[x\\\\\\](y)");
        // Inside a code span the text is literal already.
        assert_eq!(md("run `[x](y)` now"), "run `[x](y)` now");
        assert_eq!(md("a\nb"), "a b");
    }

    #[test]
    fn bare_urls_www_and_addresses_do_not_become_links() {
        assert_eq!(
            md("see https://evil.example/x and www.evil.example or a@b.example"),
            "see https\\://evil.example/x and www\\.evil.example or a\\@b.example"
        );
        assert_eq!(md("WWW.X.example http:x"), "WWW\\.X.example http:x");
        // In a code span nothing is a link already.
        assert_eq!(md("`https://x`"), "`https://x`");
    }

    #[test]
    fn control_characters_show_as_escapes_in_text_and_code() {
        assert_eq!(
            md("h\x1b]0;t\x07\x1b[2J\u{9b}"),
            "h\\\\x1b\\]0;t\\\\x07\\\\x1b\\[2J\\\\x9b"
        );
        assert_eq!(md("`a\x1b[2Jb`"), "`a\\x1b[2Jb`");
        assert_eq!(code("a\x1bb\tc"), "`a\\x1bb c`");
        assert_eq!(cell("x\u{202e}y"), "x\\\\u{202e}y");
    }

    #[test]
    fn cells_escape_pipes_and_line_breaks() {
        assert_eq!(cell("a|b\n<c>"), "a\\|b &lt;c&gt;");
    }

    #[test]
    fn code_spans_hold_any_text() {
        assert_eq!(code("ls -l"), "`ls -l`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x``"), "``` `x`` ```");
        assert_eq!(code("a\nb"), "`a b`");
        // What code() makes, md() keeps whole.
        let s = code("echo `<img src=x onerror=alert(1)>`");
        assert_eq!(md(&s), s);
    }
}
