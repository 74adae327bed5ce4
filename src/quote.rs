//! User input quoted in messages: once, and shortened when long, so that a 20,000-character
//! CPU list gives a one-line error instead of three copies of itself.

/// Longest input quoted whole, in characters.
pub const QUOTE_CHARS: usize = 60;

/// `s` as a message quotes it: whole when short, else its first [`QUOTE_CHARS`] characters
/// and its length (`0,1,2,…,29… (20000 characters)`). Control characters are escaped so the
/// message stays on one line.
pub fn shorten(s: &str) -> String {
    let n = s.chars().count();
    let head: String = s
        .chars()
        .take(QUOTE_CHARS)
        .flat_map(|c| {
            let esc: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            esc
        })
        .collect();
    if n > QUOTE_CHARS {
        format!("{head}… ({n} characters)")
    } else {
        head
    }
}

/// A message as printed to a terminal: every control character but line breaks and tabs
/// escaped (`\u{1b}`), so a value from a file or a command's output (a serde error quoting
/// an unknown variant, the last lines of a command) cannot move the cursor, clear the
/// screen or ring the bell.
pub fn escape_controls(msg: &str) -> String {
    if !msg
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return msg.to_string();
    }
    msg.chars()
        .flat_map(|c| {
            let esc: Vec<char> = if c.is_control() && c != '\n' && c != '\t' {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            esc
        })
        .collect()
}

/// `text` (a message about `input`) with every `backtick-quoted` span shortened, and a
/// long span that is `input` itself, already quoted by the caller, named instead of
/// quoted again.
pub fn spans(text: &str, input: &str) -> String {
    let mut out = String::with_capacity(text.len().min(4 * QUOTE_CHARS));
    let mut parts = text.split('`');
    if let Some(first) = parts.next() {
        out.push_str(first);
    }
    let rest: Vec<&str> = parts.collect();
    for (i, part) in rest.iter().enumerate() {
        // Odd-numbered parts are inside backticks, unless the last backtick is unpaired.
        let inside = i % 2 == 0 && i + 1 < rest.len();
        if !inside {
            if i % 2 == 0 {
                // An unpaired backtick, kept as it was.
                out.push('`');
            }
            out.push_str(part);
            continue;
        }
        if part.chars().count() > QUOTE_CHARS && *part == input.trim() {
            out.push_str("the value");
        } else {
            out.push('`');
            out.push_str(&shorten(part));
            out.push('`');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn control_characters_in_messages_are_escaped_but_line_breaks_kept() {
        assert_eq!(escape_controls("plain\n  | line\t2"), "plain\n  | line\t2");
        assert_eq!(
            escape_controls("unknown variant `\u{1b}[2J\u{7}`\r"),
            "unknown variant `\\u{1b}[2J\\u{7}`\\r"
        );
    }

    #[test]
    fn short_input_is_quoted_whole_and_long_input_once_shortened() {
        assert_eq!(shorten("0-3"), "0-3");
        assert_eq!(shorten("a\nb"), "a\\nb");
        let long = "0,".repeat(10_000);
        let q = shorten(&long);
        assert!(q.ends_with("… (20000 characters)"), "{q}");
        assert!(q.chars().count() < 100, "{q}");
    }

    #[test]
    fn long_spans_are_shortened_and_the_input_named_not_repeated() {
        let long = "x".repeat(200);
        assert_eq!(spans("`ab` is bad", &long), "`ab` is bad");
        assert_eq!(
            spans(&format!("`{long}` is not a CPU number"), &long),
            "the value is not a CPU number"
        );
        let other = "y".repeat(100);
        let s = spans(&format!("range `{other}` has no end"), &long);
        assert!(
            s.starts_with("range `yyy") && s.ends_with("(100 characters)` has no end"),
            "{s}"
        );
        assert_eq!(spans("a `b", "b"), "a `b");
    }

    proptest! {
        #[test]
        fn never_longer_than_a_line(s in "\\PC{0,300}") {
            prop_assert!(shorten(&s).chars().count() <= 4 * QUOTE_CHARS + 30);
            prop_assert!(!shorten(&s).contains('\n'));
        }
    }
}
