//! What a report section is made of, before it is a format: each experiment's view gives
//! its study section as a list of [`Block`]s, and the report's writers (HTML, Markdown)
//! lay them out. One list, so both files show the same things in the same order; the
//! writers differ only in markup (hyperfine's exporters share one markup table the same
//! way).

use super::Table;

/// One piece of a section.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// What the section measured and how, before anything else (HTML: a note paragraph;
    /// Markdown: a paragraph). Text with `code` spans.
    Intro(String),
    /// A sentence to read first (HTML: bold paragraph; Markdown: bold paragraph).
    Key(String),
    /// A remark on the numbers (HTML: a note paragraph; Markdown: a list item).
    Note(String),
    /// Lines of a list (HTML: `<ul>`; Markdown: list items).
    List(Vec<String>),
    /// Labelled statements, each with what it means (HTML: `<dl>`; Markdown: list items).
    Terms(Vec<Term>),
    Table(Table),
    /// A drawn chart, SVG. Only the HTML page shows it: the tables carry its numbers.
    Chart(String),
    /// A heading inside the section.
    Heading(String),
    /// A heading one level below [`Block::Heading`].
    Subheading(String),
    /// Detail folded under a summary line (HTML: `<details>`; Markdown: the summary line,
    /// then the blocks).
    Folded {
        summary: String,
        blocks: Vec<Block>,
    },
}

/// One labelled statement of a [`Block::Terms`].
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    pub label: String,
    pub observed: String,
    pub meaning: String,
}
