//! The one table type: a header and rows of plain text, drawn for the terminal by
//! [`Table::text`] and for the report by its HTML and Markdown renderers.

/// A header row and body rows; cells are plain text (renderers escape).
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Per column, where [`Table::text`] puts a cell; columns past the end are [`Align::Auto`].
    pub align: Vec<Align>,
}

/// What a cell holds for a value that was not measured or does not apply. HTML and
/// Markdown print it as it is; the terminal prints `-`, as its other tables do.
pub const NONE: &str = "–";

/// Where a column's cells go in [`Table::text`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Align {
    /// Body cells that look numeric (the first word is a number: `74,635`, `5.73 M`,
    /// `4.7 ms`, `53.1%`, `1.5×`) right, everything else left; the header left.
    #[default]
    Auto,
    /// Every cell left, the header too.
    Left,
    /// Every cell right, the header too (a column of ranges such as `62-81`).
    Right,
}

impl Table {
    pub fn new(header: &[&str]) -> Self {
        Self::with_header(header.iter().map(|s| s.to_string()).collect())
    }

    /// A table whose header is built at run time (optional columns).
    pub fn with_header(header: Vec<String>) -> Self {
        Table {
            header,
            rows: Vec::new(),
            align: Vec::new(),
        }
    }

    /// Puts every cell of column `col` to one side, overriding [`Align::Auto`].
    pub fn align(mut self, col: usize, a: Align) -> Self {
        if self.align.len() <= col {
            self.align.resize(col + 1, Align::Auto);
        }
        self.align[col] = a;
        self
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// The table as aligned terminal text, two spaces between columns, no trailing
    /// spaces, [`NONE`] as `-`. A row may be shorter than the header.
    pub fn text(&self) -> String {
        let cell = |c: &String| {
            if c == NONE {
                "-".to_string()
            } else {
                c.clone()
            }
        };
        let body: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.iter().map(cell).collect())
            .collect();
        let all = || std::iter::once(&self.header).chain(body.iter());
        let ncols = all().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0usize; ncols];
        for r in all() {
            for (i, c) in r.iter().enumerate() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        let numeric = |s: &str| {
            let w = s.split_whitespace().next().unwrap_or("");
            let w = w.trim_end_matches(['%', 'x', '×']).replace(',', "");
            !w.is_empty() && w.parse::<f64>().is_ok_and(f64::is_finite)
        };
        let mut out = String::new();
        for (ri, r) in all().enumerate() {
            let mut line = String::new();
            for (i, c) in r.iter().enumerate() {
                let pad = widths[i] - c.chars().count();
                if i > 0 {
                    line.push_str("  ");
                }
                let right = match self.align.get(i).copied().unwrap_or_default() {
                    Align::Auto => ri > 0 && numeric(c),
                    Align::Left => false,
                    Align::Right => true,
                };
                if right {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(c);
                } else {
                    line.push_str(c);
                    line.push_str(&" ".repeat(pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_go_right_and_text_left_under_a_left_header() {
        let mut t = Table::new(&["a", "count"]);
        t.push(vec!["long name".into(), "5".into()]);
        t.push(vec!["b".into(), "1,024 x".into()]);
        assert_eq!(
            t.text(),
            "a          count\nlong name        5\nb          1,024 x\n"
        );
    }

    #[test]
    fn terminal_text_marks_what_was_not_measured_with_a_hyphen() {
        let mut t = Table::new(&["THREAD", "SPINS"]);
        t.push(vec!["0".into(), NONE.into()]);
        t.push(vec!["1".into(), "1,024".into()]);
        assert_eq!(t.text(), "THREAD  SPINS\n     0  -\n     1  1,024\n");
    }

    #[test]
    fn a_column_can_be_put_to_one_side_header_included() {
        let mut t = Table::new(&["core", "cpus", "busy %"])
            .align(0, Align::Right)
            .align(1, Align::Left)
            .align(2, Align::Right);
        t.push(vec!["10".into(), "3,7".into(), "62-81".into()]);
        t.push(vec!["2".into(), "1".into(), "5".into()]);
        assert_eq!(
            t.text(),
            "core  cpus  busy %\n  10  3,7    62-81\n   2  1          5\n"
        );
    }

    #[test]
    fn short_rows_and_an_empty_table_leave_no_trailing_spaces() {
        let mut t = Table::new(&["NAME", "NOTE"]);
        t.push(vec!["x".into()]);
        assert_eq!(t.text(), "NAME  NOTE\nx\n");
        assert_eq!(Table::with_header(Vec::new()).text(), "\n");
    }
}
