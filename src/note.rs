//! Notes a result carries for its reader, typed: each kind of note is a variant of its
//! module's note enum, whose `Display` is the sentence, so the wording lives in one place
//! and code (and tests) can ask what a note says without matching text.
//!
//! In JSON a note is its sentence, as when notes were free text: a result file reads the
//! same, and any string read back (an older file, another version's wording) becomes the
//! enum's `Other` variant, shown as written. Two notes are equal when they say the same.

/// Gives a note enum with an `Other(String)` variant and a `Display` impl its JSON form
/// (the sentence), `From<String>` and `From<&str>` (as `Other`), `String: From<note>` (the
/// sentence, for models that keep their notes as text), and equality by sentence.
macro_rules! text_note {
    ($t:ty) => {
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                <String as serde::Deserialize>::deserialize(d).map(<$t>::Other)
            }
        }

        impl From<String> for $t {
            fn from(s: String) -> Self {
                <$t>::Other(s)
            }
        }

        impl From<&str> for $t {
            fn from(s: &str) -> Self {
                <$t>::Other(s.to_string())
            }
        }

        impl From<$t> for String {
            fn from(n: $t) -> String {
                n.to_string()
            }
        }

        impl PartialEq for $t {
            fn eq(&self, other: &Self) -> bool {
                self.to_string() == other.to_string()
            }
        }

        impl Eq for $t {}

        impl PartialEq<str> for $t {
            fn eq(&self, other: &str) -> bool {
                self.to_string().as_str() == other
            }
        }

        impl PartialEq<&str> for $t {
            fn eq(&self, other: &&str) -> bool {
                self.to_string().as_str() == *other
            }
        }
    };
}
pub(crate) use text_note;

#[cfg(test)]
mod tests {
    use std::fmt;

    #[derive(Debug, Clone)]
    enum Said {
        Count { n: usize },
        Other(String),
    }

    impl fmt::Display for Said {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                Said::Count { n } => write!(f, "{n} things"),
                Said::Other(s) => f.write_str(s),
            }
        }
    }

    text_note!(Said);

    #[test]
    fn a_note_is_its_sentence_in_json_and_any_sentence_reads_back() {
        let json = serde_json::to_string(&vec![Said::Count { n: 3 }]).unwrap();
        assert_eq!(json, r#"["3 things"]"#);
        let back: Vec<Said> = serde_json::from_str(&json).unwrap();
        assert!(matches!(&back[0], Said::Other(s) if s == "3 things"));
        assert_eq!(back[0], Said::Count { n: 3 }, "equal by what they say");
        assert_eq!(Said::Count { n: 1 }, "1 things");
        assert_ne!(Said::from("2 things"), Said::Count { n: 3 });
    }
}
