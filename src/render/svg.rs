//! Small, deterministic SVG charts for the HTML report: grouped bars with error bars, lines
//! on a linear or log axis, a heatmap, and the topology picture. Pure functions from data
//! to SVG text; coordinates are printed with one decimal so output is byte-stable.
//!
//! Every chart is one `<svg class="chart" data-chart="NAME">` element with a `<title>`, so
//! the report test can check each is present.

use crate::render::{coord, si};
use std::fmt::Write;

/// Colours for series, in order (colour-blind friendly, Okabe–Ito).
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000",
];
/// Colour of highlighted bars (e.g. a thread sharing its core with a scanner).
pub const HIGHLIGHT: &str = "#D55E00";

/// Escapes text for XML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    // Control characters (ESC, C1, bidirectional overrides) shown as their escapes, as on
    // a terminal: HTML forbids most of them (a parse error, HTML §13.2.5), and a `cat` of
    // the page would run them.
    for c in super::terminal::text(s).chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// An SVG document being built.
struct Doc {
    w: f64,
    h: f64,
    body: String,
}

impl Doc {
    fn new(w: f64, h: f64) -> Self {
        Doc {
            w,
            h,
            body: String::new(),
        }
    }
    fn text(&mut self, x: f64, y: f64, anchor: &str, size: f64, s: &str) {
        let _ = writeln!(
            self.body,
            r#"<text x="{}" y="{}" text-anchor="{anchor}" font-size="{}">{}</text>"#,
            coord(x),
            coord(y),
            coord(size),
            esc(s)
        );
    }
    fn text_rot(&mut self, x: f64, y: f64, size: f64, s: &str) {
        let _ = writeln!(
            self.body,
            r#"<text x="{x}" y="{y}" text-anchor="middle" font-size="{}" transform="rotate(-90 {x} {y})">{}</text>"#,
            coord(size),
            esc(s),
            x = coord(x),
            y = coord(y)
        );
    }
    fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str, width: f64) {
        let _ = writeln!(
            self.body,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{stroke}" stroke-width="{}"/>"#,
            coord(x1),
            coord(y1),
            coord(x2),
            coord(y2),
            coord(width)
        );
    }
    #[allow(clippy::too_many_arguments)]
    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, stroke: &str, title: &str) {
        let _ = write!(
            self.body,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{fill}" stroke="{stroke}""#,
            coord(x),
            coord(y),
            coord(w.max(0.0)),
            coord(h.max(0.0))
        );
        if title.is_empty() {
            self.body.push_str("/>\n");
        } else {
            let _ = writeln!(self.body, "><title>{}</title></rect>", esc(title));
        }
    }
    fn circle(&mut self, x: f64, y: f64, r: f64, fill: &str, stroke: &str, title: &str) {
        let _ = writeln!(
            self.body,
            r##"<circle cx="{}" cy="{}" r="{}" fill="{fill}" stroke="{stroke}" stroke-width="2"><title>{}</title></circle>"##,
            coord(x),
            coord(y),
            coord(r),
            esc(title)
        );
    }
    fn finish(mut self, name: &str, title: &str) -> String {
        // Wide enough for the title line (≈7 px per character at 13 px).
        self.w = self.w.max(80.0 + 7.2 * title.chars().count() as f64);
        format!(
            "<svg class=\"chart\" data-chart=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" font-family=\"sans-serif\">\n<title>{}</title>\n{}</svg>\n",
            esc(name),
            esc(title),
            self.body,
            w = coord(self.w),
            h = coord(self.h),
        )
    }
}

/// The most ticks an axis draws: a chart is a few hundred pixels tall.
pub const MAX_TICKS: usize = 32;

/// A value axis: linear from 0, or log10.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
}

impl Axis {
    /// A linear axis from 0 to a "nice" value ≥ `max`.
    pub fn linear(max: f64) -> Self {
        let max = if max.is_finite() && max > 0.0 {
            max
        } else {
            1.0
        };
        let step = nice_step(max / 5.0);
        Axis {
            lo: 0.0,
            hi: (max / step).ceil() * step,
            log: false,
        }
    }

    /// The axis that holds `values`: log over the positive finite ones, or linear from 0 to
    /// the largest finite one.
    pub fn fitting(values: impl Iterator<Item = f64>, log: bool) -> Self {
        if log {
            let (lo, hi) = values
                .filter(|v| *v > 0.0 && v.is_finite())
                .fold((f64::INFINITY, 0.0_f64), |(lo, hi), v| {
                    (lo.min(v), hi.max(v))
                });
            Axis::log(lo, hi)
        } else {
            Axis::linear(values.filter(|v| v.is_finite()).fold(0.0, f64::max))
        }
    }

    /// A log axis from the power of ten ≤ `min` to the one ≥ `max` (positive values only).
    pub fn log(min: f64, max: f64) -> Self {
        let min = if min.is_finite() && min > 0.0 {
            min
        } else {
            1.0
        };
        let max = if max.is_finite() && max > min {
            max
        } else {
            min * 10.0
        };
        // Both ends normal numbers at most 20 decades apart: an edited results.json with a
        // rate of 5e-324 put the bottom at 10^-324 = 0 and asked for 2^31 ticks. The top is
        // kept a normal number too (every value 5e-324: max·1e-20 is 0 again), so both
        // powers of ten below are normal and nonzero (IEEE 754 subnormals end at 2^-1022).
        let max = max.clamp(1e-280, 1e300);
        let min = min.max(max * 1e-20).min(max);
        Axis {
            lo: 10f64.powf(min.log10().floor()),
            hi: 10f64.powf(max.log10().ceil()),
            log: true,
        }
    }

    /// Position of `v` between 0 (bottom) and 1 (top), clamped.
    pub fn frac(&self, v: f64) -> f64 {
        let t = if self.log {
            if v <= 0.0 || !v.is_finite() {
                return 0.0;
            }
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        if t.is_finite() {
            t.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// Tick values: each power of ten (log), or 5–6 nice steps (linear).
    /// At most [`MAX_TICKS`] of them whatever the axis holds (its fields are public: an
    /// axis built by hand from a file's values must not ask for billions).
    pub fn ticks(&self) -> Vec<f64> {
        if self.log {
            let (a, b) = (self.lo.log10().round(), self.hi.log10().round());
            if !(a.is_finite() && b.is_finite()) || b < a {
                return vec![self.lo, self.hi]
                    .into_iter()
                    .filter(|v| v.is_finite())
                    .collect();
            }
            let (a, b) = (a as i32, b as i32);
            // Every decade, or every k-th one when there are more than MAX_TICKS.
            let k = ((b - a) as usize / MAX_TICKS + 1) as i32;
            (a..=b).step_by(k as usize).map(|e| 10f64.powi(e)).collect()
        } else {
            let step = nice_step(self.hi / 5.0);
            let n = (self.hi / step).round();
            if !(n.is_finite() && n >= 0.0) {
                return vec![0.0];
            }
            (0..=(n as usize).min(MAX_TICKS))
                .map(|i| i as f64 * step)
                .collect()
        }
    }
}

/// 1, 2 or 5 × a power of ten, ≥ `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    let k = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    k * p
}

/// Plot area inside a chart: left, top, width, height.
struct Area {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

impl Area {
    fn y_of(&self, axis: &Axis, v: f64) -> f64 {
        self.y + self.h * (1.0 - axis.frac(v))
    }
}

fn y_axis(d: &mut Doc, a: &Area, axis: &Axis, label: &str) {
    for t in axis.ticks() {
        let y = a.y_of(axis, t);
        d.line(a.x, y, a.x + a.w, y, "#e3e3e3", 1.0);
        d.text(a.x - 6.0, y + 4.0, "end", 11.0, &si(t));
    }
    d.line(a.x, a.y, a.x, a.y + a.h, "#555", 1.0);
    d.line(a.x, a.y + a.h, a.x + a.w, a.y + a.h, "#555", 1.0);
    d.text_rot(14.0, a.y + a.h / 2.0, 12.0, label);
}

fn legend(d: &mut Doc, x: f64, y: f64, items: &[(String, String)]) {
    let mut cx = x;
    for (name, colour) in items {
        d.rect(cx, y - 9.0, 10.0, 10.0, colour, "none", "");
        d.text(cx + 14.0, y, "start", 11.0, name);
        cx += 24.0 + 6.5 * name.chars().count() as f64;
    }
}

/// One bar of a grouped bar chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// Shown under the bar (short).
    pub label: String,
    pub value: f64,
    /// Spread shown as an error bar: (low, high).
    pub range: Option<(f64, f64)>,
    /// Index into the series colours.
    pub series: usize,
    /// Draw in the highlight colour instead.
    pub highlight: bool,
    /// Tooltip.
    pub tooltip: String,
}

/// A group of bars with a caption under it.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub caption: String,
    pub bars: Vec<Bar>,
}

/// Grouped bar chart. `series` names the colours (legend); `log` uses a log axis.
pub fn bar_chart(
    name: &str,
    title: &str,
    y_label: &str,
    groups: &[Group],
    series: &[String],
    highlight_label: Option<&str>,
    log: bool,
) -> String {
    let nbars: usize = groups.iter().map(|g| g.bars.len()).sum();
    let bar_w = if nbars <= 6 {
        48.0
    } else if nbars <= 24 {
        30.0
    } else {
        22.0
    };
    let gap = 26.0;
    let plot_w = (nbars as f64 * bar_w + groups.len() as f64 * gap).max(300.0);
    let a = Area {
        x: 70.0,
        y: 36.0,
        w: plot_w,
        h: 220.0,
    };
    let caption_lines = 3.0;
    let w = a.x + a.w + 20.0;
    let h = a.y + a.h + 24.0 + 14.0 * caption_lines + 10.0;
    let values = groups.iter().flat_map(|g| &g.bars).flat_map(|b| {
        let (lo, hi) = b.range.unwrap_or((b.value, b.value));
        [b.value, lo, hi]
    });
    let axis = Axis::fitting(values, log);
    let mut d = Doc::new(w, h);
    d.text(a.x, 18.0, "start", 13.0, title);
    let mut items: Vec<(String, String)> = series
        .iter()
        .enumerate()
        .map(|(i, s)| (s.clone(), PALETTE[i % PALETTE.len()].to_string()))
        .collect();
    if let Some(h) = highlight_label {
        items.push((h.to_string(), HIGHLIGHT.to_string()));
    }
    if items.len() > 1 || highlight_label.is_some() {
        legend(&mut d, a.x + 10.0, a.y - 4.0, &items);
    }
    y_axis(&mut d, &a, &axis, y_label);
    let mut x = a.x + gap / 2.0;
    for g in groups {
        let gx = x;
        for b in &g.bars {
            let colour = if b.highlight {
                HIGHLIGHT
            } else {
                PALETTE[b.series % PALETTE.len()]
            };
            let top = a.y_of(&axis, b.value);
            d.rect(
                x + 2.0,
                top,
                bar_w - 4.0,
                a.y + a.h - top,
                colour,
                "none",
                &b.tooltip,
            );
            if let Some((lo, hi)) = b.range {
                let cx = x + bar_w / 2.0;
                let (ylo, yhi) = (a.y_of(&axis, lo), a.y_of(&axis, hi));
                d.line(cx, ylo, cx, yhi, "#222", 1.2);
                d.line(cx - 4.0, ylo, cx + 4.0, ylo, "#222", 1.2);
                d.line(cx - 4.0, yhi, cx + 4.0, yhi, "#222", 1.2);
            }
            d.text(x + bar_w / 2.0, a.y + a.h + 12.0, "middle", 9.0, &b.label);
            x += bar_w;
        }
        let mid = (gx + x) / 2.0;
        wrap_caption(
            &mut d,
            mid,
            a.y + a.h + 26.0,
            &g.caption,
            (x - gx + gap - 4.0).max(40.0),
        );
        x += gap;
    }
    d.finish(name, title)
}

/// Writes a caption centred at `x`, on up to three lines no wider than `width`.
fn wrap_caption(d: &mut Doc, x: f64, y: f64, s: &str, width: f64) {
    let max_chars = ((width / 6.0) as usize).max(6);
    let mut lines: Vec<String> = vec![String::new()];
    for word in s.split_whitespace() {
        let cur = lines.last_mut().expect("one line");
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > max_chars {
            lines.push(word.to_string());
        } else {
            if !cur.is_empty() {
                cur.push(' ');
            }
            cur.push_str(word);
        }
    }
    if lines.len() > 3 {
        let rest = lines[2..].join(" ");
        let mut third: String = rest.chars().take(max_chars.saturating_sub(1)).collect();
        third.push('…');
        lines.truncate(2);
        lines.push(third);
    }
    for (i, l) in lines.iter().enumerate() {
        d.text(x, y + 12.0 * i as f64, "middle", 10.0, l);
    }
}

/// One point of a line series.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    /// Spread: (low, high).
    pub range: Option<(f64, f64)>,
    /// Marker colour override (e.g. by diagnosis); None = the series colour.
    pub marker: Option<String>,
    pub tooltip: String,
}

/// A named line.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<Point>,
}

/// Lines over numeric x (ticks at each distinct x). `marker_legend` explains marker colours.
pub fn line_chart(
    name: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    marker_legend: &[(String, String)],
    log: bool,
) -> String {
    let a = Area {
        x: 70.0,
        y: 52.0,
        w: 520.0,
        h: 240.0,
    };
    let w = a.x + a.w + 30.0;
    let h = a.y + a.h + 48.0;
    let pts: Vec<&Point> = series.iter().flat_map(|s| &s.points).collect();
    let mut xs: Vec<f64> = pts.iter().map(|p| p.x).filter(|x| x.is_finite()).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let (x0, x1) = match (xs.first(), xs.last()) {
        (Some(&a), Some(&b)) if b > a => (a, b),
        (Some(&a), _) => (a - 1.0, a + 1.0),
        _ => (0.0, 1.0),
    };
    let xpos = |x: f64| a.x + 20.0 + (a.w - 40.0) * (x - x0) / (x1 - x0);
    let ys = pts.iter().flat_map(|p| {
        let (lo, hi) = p.range.unwrap_or((p.y, p.y));
        [p.y, lo, hi]
    });
    let axis = Axis::fitting(ys, log);
    let mut d = Doc::new(w, h);
    d.text(a.x, 18.0, "start", 13.0, title);
    let items: Vec<(String, String)> = series
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.clone(), PALETTE[i % PALETTE.len()].to_string()))
        .collect();
    legend(&mut d, a.x + 10.0, 36.0, &items);
    if !marker_legend.is_empty() {
        let offset: f64 = items
            .iter()
            .map(|(n, _)| 24.0 + 6.5 * n.chars().count() as f64)
            .sum();
        let mut cx = a.x + 30.0 + offset;
        for (label, colour) in marker_legend {
            d.circle(cx, 32.0, 5.0, colour, "#fff", label);
            d.text(cx + 9.0, 36.0, "start", 11.0, label);
            cx += 22.0 + 6.5 * label.chars().count() as f64;
        }
    }
    y_axis(&mut d, &a, &axis, y_label);
    for &x in &xs {
        let px = xpos(x);
        d.line(px, a.y + a.h, px, a.y + a.h + 4.0, "#555", 1.0);
        d.text(px, a.y + a.h + 16.0, "middle", 11.0, &si(x));
    }
    d.text(a.x + a.w / 2.0, a.y + a.h + 36.0, "middle", 12.0, x_label);
    for (i, s) in series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let path: Vec<String> = s
            .points
            .iter()
            .map(|p| format!("{},{}", coord(xpos(p.x)), coord(a.y_of(&axis, p.y))))
            .collect();
        if path.len() > 1 {
            let _ = writeln!(
                d.body,
                r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
                path.join(" ")
            );
        }
        for p in &s.points {
            let (px, py) = (xpos(p.x), a.y_of(&axis, p.y));
            if let Some((lo, hi)) = p.range {
                d.line(px, a.y_of(&axis, lo), px, a.y_of(&axis, hi), colour, 1.2);
            }
            d.circle(
                px,
                py,
                5.0,
                p.marker.as_deref().unwrap_or(colour),
                colour,
                &p.tooltip,
            );
        }
    }
    d.finish(name, title)
}

/// The most rows (and columns) a heatmap draws: 64 × 64 cells are a picture already; a
/// matrix of thousands of CPUs from a file would make a page of hundreds of MB.
pub const MAX_HEATMAP: usize = 64;

/// How a heatmap writes its values and names its rows.
#[derive(Debug, Clone, Copy)]
pub struct HeatmapStyle {
    /// Decimals of the values in cells, tooltips and the legend.
    pub digits: usize,
    /// Between a row's and a column's label in a tooltip (`↔`, `beside`).
    pub between: &'static str,
    /// What the rows are, for "the first N … drawn".
    pub items: &'static str,
}

impl HeatmapStyle {
    /// CPU × CPU latencies: whole numbers, a symmetric relation.
    pub const CPUS: HeatmapStyle = HeatmapStyle {
        digits: 0,
        between: "↔",
        items: "CPUs",
    };
}

/// A square matrix as coloured cells (light = low, dark = high), values written in
/// cells; `None` cells are grey. At most [`MAX_HEATMAP`] rows and columns are drawn, the
/// rest named ("and N more"): the page is bounded by what it draws.
pub fn heatmap(
    name: &str,
    title: &str,
    labels: &[String],
    cells: &[Vec<Option<f64>>],
    unit: &str,
) -> String {
    heatmap_styled(name, title, labels, cells, unit, HeatmapStyle::CPUS)
}

/// [`heatmap`] with the values and row names of `style`.
pub fn heatmap_styled(
    name: &str,
    title: &str,
    labels: &[String],
    cells: &[Vec<Option<f64>>],
    unit: &str,
    style: HeatmapStyle,
) -> String {
    let digits = style.digits;
    let more = labels.len().saturating_sub(MAX_HEATMAP);
    let labels = &labels[..labels.len().min(MAX_HEATMAP)];
    let n = labels.len().max(1);
    let cell = (360.0 / n as f64).clamp(14.0, 56.0);
    // Room for the longest row label at 11 px (about 6.5 px a character).
    let widest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let x0 = (widest as f64 * 6.5 + 12.0).max(60.0);
    let y0 = 44.0;
    let w = x0 + cell * n as f64 + 90.0;
    let h = y0 + cell * n as f64 + if more > 0 { 50.0 } else { 30.0 };
    // Only the cells drawn, which have labels: a hand-edited results.json can hold more.
    let vals: Vec<f64> = cells
        .iter()
        .take(labels.len())
        .flat_map(|r| r.iter().take(labels.len()))
        .flatten()
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let colour = |v: f64| -> String {
        let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
        // From pale yellow (low) to deep blue (high).
        let (r0, g0, b0) = (255.0, 247.0, 188.0);
        let (r1, g1, b1) = (8.0, 48.0, 107.0);
        let m = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
        format!("#{:02x}{:02x}{:02x}", m(r0, r1), m(g0, g1), m(b0, b1))
    };
    let mut d = Doc::new(w, h);
    d.text(x0, 18.0, "start", 13.0, title);
    for (i, l) in labels.iter().enumerate() {
        d.text(x0 - 6.0, y0 + cell * (i as f64 + 0.5) + 4.0, "end", 11.0, l);
        d.text(x0 + cell * (i as f64 + 0.5), y0 - 6.0, "middle", 11.0, l);
    }
    // Only cells with labels: a hand-edited results.json can hold more.
    for (i, row) in cells.iter().take(labels.len()).enumerate() {
        for (j, v) in row.iter().take(labels.len()).enumerate() {
            let (x, y) = (x0 + cell * j as f64, y0 + cell * i as f64);
            match v {
                Some(v) if v.is_finite() => {
                    let tip = format!(
                        "{} {} {}: {:.digits$} {unit}",
                        labels[i], style.between, labels[j], v
                    );
                    d.rect(x, y, cell, cell, &colour(*v), "#fff", &tip);
                    if cell >= 30.0 {
                        let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
                        let fg = if t > 0.5 { "#fff" } else { "#000" };
                        let _ = writeln!(
                            d.body,
                            r#"<text x="{}" y="{}" text-anchor="middle" font-size="10" fill="{fg}">{:.digits$}</text>"#,
                            coord(x + cell / 2.0),
                            coord(y + cell / 2.0 + 3.5),
                            v
                        );
                    }
                }
                _ => d.rect(x, y, cell, cell, "#eeeeee", "#fff", ""),
            }
        }
    }
    if more > 0 {
        d.text(
            x0,
            y0 + cell * n as f64 + 30.0,
            "start",
            11.0,
            &format!(
                "the first {n} {} drawn, and {} more (every value is in results.json)",
                style.items,
                crate::render::thousands(more as u64)
            ),
        );
    }
    if lo.is_finite() {
        let lx = x0 + cell * n as f64 + 16.0;
        d.rect(lx, y0, 14.0, 14.0, &colour(lo), "none", "");
        d.text(
            lx + 18.0,
            y0 + 11.0,
            "start",
            10.0,
            &format!("{lo:.digits$} {unit}"),
        );
        if hi > lo {
            d.rect(lx, y0 + 22.0, 14.0, 14.0, &colour(hi), "none", "");
            d.text(
                lx + 18.0,
                y0 + 33.0,
                "start",
                10.0,
                &format!("{hi:.digits$} {unit}"),
            );
        }
    }
    d.finish(name, title)
}

/// Core boxes for the topology picture: the CPUs of one core.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreBox {
    pub cpus: Vec<u32>,
    /// CPUs this process may not use.
    pub disallowed: Vec<u32>,
}

/// One L3 group with its cores.
#[derive(Debug, Clone, PartialEq)]
pub struct L3Box {
    pub label: String,
    pub cores: Vec<CoreBox>,
}

/// One package with its L3 groups.
#[derive(Debug, Clone, PartialEq)]
pub struct PackageBox {
    pub label: String,
    pub l3: Vec<L3Box>,
}

/// Packages ⊃ L3 groups ⊃ cores ⊃ logical CPUs (siblings side by side in one core).
pub fn topology(name: &str, title: &str, packages: &[PackageBox]) -> String {
    let cpu_w = 34.0;
    let cpu_h = 24.0;
    let pad = 8.0;
    let per_row = 8usize;
    let core_w = |c: &CoreBox| pad + c.cpus.len().max(1) as f64 * (cpu_w + 4.0) + pad - 4.0;
    let core_h = cpu_h + 2.0 * pad + 12.0;
    // Lay out: each L3 group wraps its cores into rows of `per_row`.
    let l3_size = |g: &L3Box| -> (f64, f64) {
        let rows: Vec<&[CoreBox]> = g.cores.chunks(per_row).collect();
        let w = rows
            .iter()
            .map(|r| r.iter().map(|c| core_w(c) + 6.0).sum::<f64>())
            .fold(0.0, f64::max)
            + 2.0 * pad;
        let h = rows.len() as f64 * (core_h + 6.0) + 2.0 * pad + 14.0;
        (w.max(120.0), h)
    };
    let pkg_size = |p: &PackageBox| -> (f64, f64) {
        let sizes: Vec<(f64, f64)> = p.l3.iter().map(l3_size).collect();
        let w = sizes.iter().map(|s| s.0 + 8.0).sum::<f64>() + 2.0 * pad;
        let h = sizes.iter().map(|s| s.1).fold(0.0, f64::max) + 2.0 * pad + 16.0;
        (w.max(160.0), h)
    };
    let sizes: Vec<(f64, f64)> = packages.iter().map(pkg_size).collect();
    let w = sizes.iter().map(|s| s.0).fold(0.0, f64::max) + 20.0;
    let h = sizes.iter().map(|s| s.1 + 10.0).sum::<f64>() + 40.0;
    let mut d = Doc::new(w.max(300.0), h);
    d.text(10.0, 18.0, "start", 13.0, title);
    let mut y = 30.0;
    for (p, (pw, ph)) in packages.iter().zip(&sizes) {
        d.rect(10.0, y, *pw, *ph, "#f4f4f4", "#888", "");
        d.text(10.0 + pad, y + 14.0, "start", 11.0, &p.label);
        let mut x = 10.0 + pad;
        for g in &p.l3 {
            let (gw, gh) = l3_size(g);
            let gy = y + 20.0;
            d.rect(x, gy, gw, gh, "#e8f0fa", "#6a8fc0", "");
            d.text(x + pad, gy + 13.0, "start", 10.0, &g.label);
            for (ri, row) in g.cores.chunks(per_row).enumerate() {
                let mut cx = x + pad;
                let cy = gy + 18.0 + ri as f64 * (core_h + 6.0);
                for c in row {
                    let cw = core_w(c);
                    let siblings = c.cpus.len() > 1;
                    let tip = if siblings {
                        format!("core with SMT siblings {:?}", c.cpus)
                    } else {
                        format!("core with one CPU ({})", c.cpus[0])
                    };
                    d.rect(cx, cy, cw, core_h, "#ffffff", "#333", &tip);
                    d.text(
                        cx + cw / 2.0,
                        cy + 11.0,
                        "middle",
                        9.0,
                        if siblings { "core (SMT)" } else { "core" },
                    );
                    for (k, cpu) in c.cpus.iter().enumerate() {
                        let px = cx + pad + k as f64 * (cpu_w + 4.0);
                        let py = cy + 14.0 + pad / 2.0;
                        let off = c.disallowed.contains(cpu);
                        let fill = if off {
                            "#cccccc"
                        } else {
                            PALETTE[k % PALETTE.len()]
                        };
                        d.rect(
                            px,
                            py,
                            cpu_w,
                            cpu_h,
                            fill,
                            "none",
                            &format!("CPU {cpu}{}", if off { " (not usable)" } else { "" }),
                        );
                        let _ = writeln!(
                            d.body,
                            r##"<text x="{}" y="{}" text-anchor="middle" font-size="11" fill="#fff">{cpu}</text>"##,
                            coord(px + cpu_w / 2.0),
                            coord(py + cpu_h / 2.0 + 4.0)
                        );
                    }
                    cx += cw + 6.0;
                }
            }
            x += gw + 8.0;
        }
        y += ph + 10.0;
    }
    d.finish(name, title)
}

/// A vertical mark on [`log_log_chart`]'s x axis (a TLB's reach, where two curves part).
#[derive(Debug, Clone, PartialEq)]
pub struct XMark {
    pub x: f64,
    pub label: String,
}

/// Lines over a log₂ x axis and a log₁₀ y axis, each point's spread drawn as a band around
/// its line: for values spanning orders of magnitude on both axes, such as latency vs
/// working set. `x_ticks` are the caller's (value, label) pairs, e.g. byte sizes in powers
/// of two; `marks` are dashed vertical lines with a label at the top.
pub fn log_log_chart(
    name: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    x_ticks: &[(f64, String)],
    marks: &[XMark],
) -> String {
    let a = Area {
        x: 70.0,
        y: 52.0,
        w: 560.0,
        h: 260.0,
    };
    let w = a.x + a.w + 30.0;
    let h = a.y + a.h + 48.0;
    let pts: Vec<&Point> = series.iter().flat_map(|s| &s.points).collect();
    let xs = pts
        .iter()
        .map(|p| p.x)
        .chain(x_ticks.iter().map(|t| t.0))
        .filter(|x| *x > 0.0 && x.is_finite());
    let (x0, x1) = xs.fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    let (l0, l1) = if x1 > x0 {
        (x0.log2(), x1.log2())
    } else if x1 > 0.0 {
        (x1.log2() - 1.0, x1.log2() + 1.0)
    } else {
        (0.0, 1.0)
    };
    let xpos = |x: f64| {
        let t = if x > 0.0 && x.is_finite() {
            ((x.log2() - l0) / (l1 - l0)).clamp(0.0, 1.0)
        } else {
            0.0
        };
        a.x + 10.0 + (a.w - 20.0) * t
    };
    let ys: Vec<f64> = pts
        .iter()
        .flat_map(|p| {
            let (lo, hi) = p.range.unwrap_or((p.y, p.y));
            [p.y, lo, hi]
        })
        .filter(|v| *v > 0.0 && v.is_finite())
        .collect();
    let axis = Axis::log(
        ys.iter().copied().fold(f64::INFINITY, f64::min),
        ys.iter().copied().fold(0.0, f64::max),
    );
    let mut d = Doc::new(w, h);
    d.text(a.x, 18.0, "start", 13.0, title);
    let items: Vec<(String, String)> = series
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.clone(), PALETTE[i % PALETTE.len()].to_string()))
        .collect();
    legend(&mut d, a.x + 10.0, 36.0, &items);
    y_axis(&mut d, &a, &axis, y_label);
    for (x, label) in x_ticks {
        let px = xpos(*x);
        d.line(px, a.y + a.h, px, a.y + a.h + 4.0, "#555", 1.0);
        d.text(px, a.y + a.h + 16.0, "middle", 11.0, label);
    }
    d.text(a.x + a.w / 2.0, a.y + a.h + 36.0, "middle", 12.0, x_label);
    for (i, m) in marks.iter().enumerate() {
        let px = xpos(m.x);
        let _ = writeln!(
            d.body,
            r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#777" stroke-width="1" stroke-dasharray="4 3"/>"##,
            coord(a.y),
            coord(a.y + a.h),
            x = coord(px)
        );
        // Staggered so neighbouring marks' labels do not overlap.
        d.text(
            px + 3.0,
            a.y + 12.0 + 12.0 * (i % 3) as f64,
            "start",
            10.0,
            &m.label,
        );
    }
    for (i, s) in series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        // The spread as a band: along the tops, back along the bottoms.
        let band: Vec<String> = s
            .points
            .iter()
            .map(|p| (p.x, p.range.map_or(p.y, |r| r.1)))
            .chain(
                s.points
                    .iter()
                    .rev()
                    .map(|p| (p.x, p.range.map_or(p.y, |r| r.0))),
            )
            .map(|(x, y)| format!("{},{}", coord(xpos(x)), coord(a.y_of(&axis, y))))
            .collect();
        if s.points.len() > 1 && s.points.iter().any(|p| p.range.is_some()) {
            let _ = writeln!(
                d.body,
                r#"<polygon points="{}" fill="{colour}" fill-opacity="0.2" stroke="none"/>"#,
                band.join(" ")
            );
        }
        let path: Vec<String> = s
            .points
            .iter()
            .map(|p| format!("{},{}", coord(xpos(p.x)), coord(a.y_of(&axis, p.y))))
            .collect();
        if !path.is_empty() {
            let _ = writeln!(
                d.body,
                r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
                path.join(" ")
            );
        }
        for p in &s.points {
            d.circle(
                xpos(p.x),
                a.y_of(&axis, p.y),
                2.5,
                colour,
                colour,
                &p.tooltip,
            );
        }
    }
    d.finish(name, title)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn balanced(svg: &str) {
        assert!(svg.starts_with("<svg "));
        assert!(svg.trim_end().ends_with("</svg>"));
        for tag in ["svg", "text", "title"] {
            let open = svg.matches(&format!("<{tag}")).count();
            let close = svg.matches(&format!("</{tag}>")).count();
            assert_eq!(open, close, "<{tag}> balanced in {svg}");
        }
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
    }

    #[test]
    fn a_huge_matrix_draws_its_first_cpus_and_names_the_rest() {
        let n = 2000;
        let labels: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        let row: Vec<Option<f64>> = (0..n).map(|j| Some(50.0 + j as f64)).collect();
        let cells = vec![row; n];
        let svg = heatmap("h", "t", &labels, &cells, "ns");
        assert!(svg.contains("and 1,936 more"), "names the CPUs not drawn");
        assert_eq!(svg.matches("<rect").count() - 2, MAX_HEATMAP * MAX_HEATMAP);
        // 4,000,000 cells would be hundreds of MB; 64 × 64 are well under one.
        assert!(svg.len() < 1 << 20, "{} bytes", svg.len());
    }

    #[test]
    fn an_axis_of_only_tiny_values_draws_a_few_ticks() {
        // Every value 5e-324 (the smallest subnormal): the bottom was 10^-324 = 0 and
        // ticks() asked for 2^31 values (16 GB).
        for (lo, hi) in [
            (5e-324, 5e-324),
            (5e-324, 1e-320),
            (0.0, 5e-324),
            (1e-310, 1e-309),
        ] {
            let a = Axis::log(lo, hi);
            assert!(
                a.lo > 0.0 && a.lo.is_normal() && a.hi.is_normal(),
                "{lo} {hi}: {}..{}",
                a.lo,
                a.hi
            );
            let t = a.ticks();
            assert!(
                !t.is_empty() && t.len() <= MAX_TICKS + 1,
                "{lo} {hi}: {} ticks",
                t.len()
            );
            let f = Axis::fitting([lo, hi].into_iter(), true);
            assert!(f.ticks().len() <= MAX_TICKS + 1);
            assert!(Axis::fitting([lo, hi].into_iter(), false).ticks().len() <= MAX_TICKS + 1);
        }
        // Built by hand from whatever a file held: still bounded.
        for (lo, hi, log) in [
            (0.0, 1e300, true),
            (1e-300, 1e300, true),
            (0.0, f64::INFINITY, false),
            (0.0, 1e-320, false),
            (0.0, f64::NAN, true),
        ] {
            let n = Axis { lo, hi, log }.ticks().len();
            assert!(n <= MAX_TICKS + 1, "{lo}..{hi} log {log}: {n} ticks");
        }
    }

    #[test]
    fn axes() {
        let a = Axis::log(212.0, 74_635.0);
        assert_eq!((a.lo, a.hi), (100.0, 100_000.0));
        assert_eq!(a.ticks(), [100.0, 1000.0, 10_000.0, 100_000.0]);
        assert!((a.frac(1000.0) - 1.0 / 3.0).abs() < 1e-9);
        assert_eq!(a.frac(0.0), 0.0);
        let l = Axis::linear(7.3);
        assert_eq!((l.lo, l.hi), (0.0, 8.0));
        assert_eq!(l.ticks().len(), 5);
        assert_eq!(nice_step(0.3), 0.5);
        assert_eq!(nice_step(120.0), 200.0);
        assert_eq!(Axis::linear(f64::NAN).hi, 1.0);
        // Extreme values keep a small, finite axis (5e-324 once asked for 2^31 ticks).
        for (lo, hi) in [(5e-324, 6.7e6), (1.0, f64::MAX), (5e-324, f64::MAX)] {
            let a = Axis::log(lo, hi);
            assert!(
                a.lo > 0.0 && a.hi.is_finite() && a.ticks().len() <= 22,
                "{lo} {hi}"
            );
        }
    }

    #[test]
    fn bars_draw_one_rect_per_bar_and_escape_text() {
        let g = vec![Group {
            caption: "ttas & <friends>".into(),
            bars: vec![
                Bar {
                    label: "0".into(),
                    value: 10.0,
                    range: Some((8.0, 12.0)),
                    series: 0,
                    highlight: false,
                    tooltip: "t0".into(),
                },
                Bar {
                    label: "1".into(),
                    value: f64::NAN,
                    range: None,
                    series: 0,
                    highlight: true,
                    tooltip: "t1".into(),
                },
            ],
        }];
        let s = bar_chart("x", "T", "ops/s", &g, &["a".into()], Some("shares"), false);
        balanced(&s);
        assert!(s.contains("&amp; &lt;friends&gt;"));
        assert_eq!(s.matches("<title>t").count(), 2);
        assert!(s.contains(HIGHLIGHT));
        assert!(s.contains(r#"data-chart="x""#));
    }

    #[test]
    fn lines_heatmap_topology_are_well_formed() {
        let s = line_chart(
            "n",
            "N",
            "burners",
            "ops/s",
            &[Series {
                name: "ticket".into(),
                points: vec![
                    Point {
                        x: 0.0,
                        y: 5e6,
                        range: Some((4e6, 6e6)),
                        marker: None,
                        tooltip: "a".into(),
                    },
                    Point {
                        x: 1.0,
                        y: 200.0,
                        range: None,
                        marker: Some("#f00".into()),
                        tooltip: "b".into(),
                    },
                ],
            }],
            &[("collapse".into(), "#f00".into())],
            true,
        );
        balanced(&s);
        assert!(s.contains("<polyline"));
        let h = heatmap(
            "c",
            "C",
            &["0".into(), "1".into()],
            &[vec![None, Some(80.0)], vec![Some(90.0), None]],
            "ns",
        );
        balanced(&h);
        assert_eq!(h.matches("<rect").count(), 4 + 2);
        let t = topology(
            "t",
            "T",
            &[PackageBox {
                label: "Package 0".into(),
                l3: vec![L3Box {
                    label: "L3".into(),
                    cores: vec![
                        CoreBox {
                            cpus: vec![0, 4],
                            disallowed: vec![],
                        },
                        CoreBox {
                            cpus: vec![1, 5],
                            disallowed: vec![5],
                        },
                    ],
                }],
            }],
        );
        balanced(&t);
        assert!(t.contains("core (SMT)"));
        assert!(t.contains("CPU 5 (not usable)"));
    }
}
