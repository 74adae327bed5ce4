//! report.html and fleet.html in a real browser: Debian's headless `chromium` loads each page
//! from a file, runs its scripts, and the test reads what it rendered (`--dump-dom`, the
//! DOM serialised after load), what it asked the network for (`--log-net-log`, Chromium's
//! NetLog of every request), and keeps a screenshot under `target/browser/` for CI to
//! publish.
//!
//! Checked on each page: the answer table is the first table; no Markdown markup (a
//! backtick, `**`) and no entity text (`&amp;` …) is visible, in the DOM's text and in the
//! rendered `innerText`; no answer wraps onto a second line at 1280 or 800 px; no script
//! throws; no request leaves the page (the page holds no external `src`/`href`/`url(`,
//! and Chromium, whose resolver and proxy are pointed at nothing, logs no request that
//! the page started).

use crate::common;
use assert_cmd::Command;
use smtlab::progress::Quiet;
use smtlab::report;
use std::path::{Path, PathBuf};

fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(out) = std::process::Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            && out.status.success()
        {
            let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if !p.is_empty() {
                return Some(p.into());
            }
        }
    }
    None
}

/// Where the screenshots go: `target/browser/`, beside the other build outputs, so that CI
/// can keep them as artefacts after the test's temporary folders are gone.
fn shots_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target/tmp has a parent")
        .join("browser");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Chromium with nothing to reach: every host name resolves to nothing
/// (`--host-resolver-rules`) and every request that still tried would go to a proxy on a
/// port nobody listens on (port 9, discard). The background services a fresh profile
/// starts are switched off where a switch exists; what remains of them is told apart from
/// the page's own requests in [`page_requests`].
fn headless(bin: &Path, profile: &Path, extra: &[String], url: &str) -> std::process::Output {
    std::process::Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--no-first-run",
            // A guard against a hung browser, not a timing margin: a local page loads in
            // well under a second; after 5 minutes Chromium stops loading and dumps what
            // it has, which the checks then fail on, instead of the test waiting for ever.
            "--timeout=300000",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--proxy-server=http://127.0.0.1:9",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .output()
        .expect("chromium runs")
}

/// What Chromium made of one page.
struct Page {
    /// The DOM after load, serialised.
    dom: String,
    /// The text a reader can see: the DOM's text outside `<script>`/`<style>`, plus the
    /// `title` tooltips, with the serialiser's escapes undone once.
    text: String,
    /// URLs of requests the page itself started that were not files of the page.
    left: Vec<String>,
    /// Console and script errors.
    errors: Vec<String>,
}

/// Loads `html` in headless Chromium twice: once for the DOM and the NetLog, once for a
/// screenshot saved as `target/browser/<shot>`.
fn load(bin: &Path, html: &Path, shot: &str) -> Page {
    let url = format!("file://{}", html.display());
    let tmp = tempfile::tempdir().unwrap();
    let profile = tmp.path().join("profile");
    let netlog = tmp.path().join("net.json");
    let out = headless(
        bin,
        &profile,
        &[
            "--dump-dom".into(),
            format!("--log-net-log={}", netlog.display()),
        ],
        &url,
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "chromium failed: {stderr}");
    let dom = String::from_utf8(out.stdout).expect("the DOM is UTF-8");
    assert!(dom.contains("</html>"), "a whole page came back: {dom}");
    let errors = stderr
        .lines()
        .filter(|l| {
            l.contains(":CONSOLE") || l.contains("Uncaught") || l.contains("ERR_FILE_NOT_FOUND")
        })
        .map(str::to_string)
        .collect();
    let log = std::fs::read_to_string(&netlog).expect("chromium wrote its NetLog");
    let left = page_requests(&log);

    let png = shots_dir().join(shot);
    let _ = std::fs::remove_file(&png);
    let out = headless(
        bin,
        &profile,
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1280,4000".into(),
            "--hide-scrollbars".into(),
        ],
        &url,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&png).expect("chromium wrote the screenshot");
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000,
        "a real screenshot at {} ({} bytes)",
        png.display(),
        bytes.len()
    );
    // The DOM beside the screenshot: what the checks read, for whoever reads a failure.
    std::fs::write(png.with_extension("dom.html"), &dom).unwrap();
    let text = visible_text(&dom);
    Page {
        dom,
        text,
        left,
        errors,
    }
}

/// What the page shows a reader `width` pixels wide, read by a script in a wrapper page
/// beside it that loads it in a frame of that width (`--allow-file-access-from-files`
/// lets a file's script read a file frame's document): the page's `innerText` (the text
/// as rendered: nothing hidden, no markup), and every answer cell whose text takes more
/// than one line.
struct Layout {
    text: String,
    wrapped: Vec<String>,
}

/// The cells that hold an answer: the answer column of each page's answer table and the
/// fleet's answer cells, which carry their answer as a class.
const ANSWER_CELLS: &str = "table.answers tr > td:nth-child(2), td.keep-ht-on, td.turn-ht-off, \
     td.small-loss, td.inconclusive, td.not-measured, td.depends-on-workload";

fn layout(bin: &Path, html: &Path, width: u32) -> Layout {
    let dir = html.parent().unwrap();
    let wrapper = dir.join(format!("layout-{width}.html"));
    let name = html.file_name().unwrap().to_str().unwrap();
    std::fs::write(
        &wrapper,
        format!(
            "<!DOCTYPE html><html><body><iframe id=\"f\" src=\"{name}\" \
             style=\"width:{width}px;height:2000px;border:0\"></iframe><pre id=\"out\"></pre>\
             <script>\
             const f = document.getElementById('f');\
             f.addEventListener('load', () => {{\
               const d = f.contentDocument;\
               const lines = e => {{ const r = d.createRange(); r.selectNodeContents(e);\
                 return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size; }};\
               const wrapped = [...d.querySelectorAll('{ANSWER_CELLS}')]\
                 .filter(e => lines(e) > 1).map(e => e.textContent + ' (' + lines(e) + ' lines)');\
               document.getElementById('out').textContent =\
                 JSON.stringify({{text: d.body.innerText, wrapped}});\
             }});\
             </script></body></html>"
        ),
    )
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = headless(
        bin,
        &tmp.path().join("profile"),
        &["--dump-dom".into(), "--allow-file-access-from-files".into()],
        &format!("file://{}", wrapper.display()),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8(out.stdout).unwrap();
    let marker = "<pre id=\"out\">";
    let start = dom.find(marker).expect("the wrapper's output") + marker.len();
    let json = &dom[start..start + dom[start..].find("</pre>").unwrap()];
    // Text in the serialised DOM escapes only &, <, > and no-break spaces.
    let json = json
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    let v: serde_json::Value = serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("the wrapper's script ran ({e}): {json}"));
    Layout {
        text: v["text"].as_str().unwrap().to_string(),
        wrapped: v["wrapped"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect(),
    }
}

/// As a reader sees the page at a laptop's width and at a narrow window's: no visible
/// markup in the rendered text, and every answer on one line.
fn check_layout(name: &str, bin: &Path, html: &Path) {
    for width in [1280, 800] {
        let l = layout(bin, html, width);
        assert!(l.text.len() > 1000, "{name}: the page rendered: {}", l.text);
        let s = slips(&l.text);
        assert!(
            s.is_empty(),
            "{name} at {width} px: visible markup or entities:\n{}",
            s.join("\n")
        );
        assert!(
            l.wrapped.is_empty(),
            "{name} at {width} px: answers wrap: {:?}",
            l.wrapped
        );
    }
}

/// URLs of the requests a page started, from a NetLog (Chromium's `net/log` JSON: an
/// `events` list whose `URL_REQUEST_START_JOB` entries carry the request's `url` and
/// `initiator`). The browser's own background requests have no initiating origin
/// (`"not an origin"`); a request from a page loaded from a file has the file's opaque
/// origin (`"null"`) or a real one. Files and inline data are the page itself.
fn page_requests(netlog: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(netlog).expect("the NetLog is JSON");
    let start = v["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
        .as_u64()
        .expect("the NetLog names URL_REQUEST_START_JOB");
    let mut out = Vec::new();
    for e in v["events"].as_array().expect("NetLog events") {
        if e["type"].as_u64() != Some(start) {
            continue;
        }
        let p = &e["params"];
        let url = p["url"].as_str().unwrap_or_default();
        let initiator = p["initiator"].as_str().unwrap_or("not an origin");
        if initiator == "not an origin" {
            continue;
        }
        if ["file:", "data:", "blob:", "about:"]
            .iter()
            .any(|s| url.starts_with(s))
        {
            continue;
        }
        out.push(url.to_string());
    }
    out
}

/// The text of a serialised DOM as a reader sees it: tags dropped, `<script>`, `<style>`
/// and comments skipped, `title="…"` tooltips kept, and the serialiser's escapes (`&amp;`,
/// `&lt;`, `&gt;`, `&quot;`, `&nbsp;`: the HTML fragment serialisation algorithm escapes
/// nothing else) undone once, so that what remains of `&amp;` is literal text on screen.
fn visible_text(dom: &str) -> String {
    let mut out = String::new();
    let mut rest = dom;
    while let Some(i) = rest.find('<') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        if let Some(r) = rest.strip_prefix("<!--") {
            rest = r.find("-->").map_or("", |j| &r[j + 3..]);
            continue;
        }
        let end = rest.find('>').map_or(rest.len(), |j| j + 1);
        let tag = &rest[..end];
        for attr in ["title=\"", "aria-label=\""] {
            if let Some(k) = tag.find(attr) {
                let v = &tag[k + attr.len()..];
                out.push(' ');
                out.push_str(&v[..v.find('"').unwrap_or(v.len())]);
                out.push(' ');
            }
        }
        rest = &rest[end..];
        for skip in ["script", "style"] {
            if tag.starts_with(&format!("<{skip}")) {
                let close = format!("</{skip}>");
                rest = rest.find(&close).map_or("", |j| &rest[j + close.len()..]);
            }
        }
        out.push(' ');
    }
    out.push_str(rest);
    out.replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// Every way a page can send the browser elsewhere without a click: external `src`,
/// `href` on anything but a link (`<link>` loads it), `url(…)` and `@import` in styles.
fn external_references(dom: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lower = dom.to_ascii_lowercase();
    for attr in ["src=\"", "srcset=\"", "url(", "@import", "action=\""] {
        let mut from = 0;
        while let Some(k) = lower[from..].find(attr) {
            let at = from + k;
            let v = lower[at + attr.len()..].trim_start_matches(['"', '\'']);
            if !(v.starts_with('#') || v.starts_with("data:")) {
                out.push(dom[at..(at + 80).min(dom.len())].to_string());
            }
            from = at + attr.len();
        }
    }
    let mut from = 0;
    while let Some(k) = lower[from..].find("<link") {
        let at = from + k;
        let end = lower[at..].find('>').map_or(lower.len(), |j| at + j);
        let tag = &lower[at..end];
        if tag.contains("href=\"http") || tag.contains("href=\"//") {
            out.push(dom[at..end].to_string());
        }
        from = end;
    }
    out
}

/// Where each visible-text slip is, with some text around it.
fn slips(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for needle in [
        "`", "**", "&amp;", "&lt;", "&gt;", "&quot;", "&#", "&nbsp;", "__",
    ] {
        let mut from = 0;
        while let Some(k) = text[from..].find(needle) {
            let at = from + k;
            let a = text.floor_char_boundary(at.saturating_sub(60));
            let b = text.ceil_char_boundary((at + 60).min(text.len()));
            out.push(format!(
                "{needle:?} in …{}…",
                text[a..b].split_whitespace().collect::<Vec<_>>().join(" ")
            ));
            from = at + needle.len();
        }
    }
    out
}

/// The checks every page passes; `answers` is the answer table's class.
fn check(name: &str, p: &Page) {
    assert!(
        p.errors.is_empty(),
        "{name}: console errors: {:?}",
        p.errors
    );
    let s = slips(&p.text);
    assert!(
        s.is_empty(),
        "{name}: visible markup or entities:\n{}",
        s.join("\n")
    );
    assert!(
        p.left.is_empty(),
        "{name}: requests left the page: {:?}",
        p.left
    );
    let ext = external_references(&p.dom);
    assert!(ext.is_empty(), "{name}: external references: {ext:?}");
    let body = &p.dom[p.dom.find("<body").expect("a body")..];
    let first = &body[body.find("<table").expect("a table")..];
    let first = &first[..first.find('>').unwrap()];
    assert!(
        first.contains("class=\"answers\""),
        "{name}: the first table is the answer table, not {first}"
    );
}

fn need_chromium() -> Option<PathBuf> {
    let bin = chromium();
    if bin.is_none() {
        common::skip(
            common::Need::Chromium,
            "chromium is not installed (apt-get install chromium)",
        );
    }
    bin
}

/// Expected chart names in the fake report, one `<svg data-chart>` each.
const CHARTS: [&str; 6] = [
    "topology",
    "c2c-heatmap",
    "lockscan-threads",
    "neighbors-throughput",
    "oltp-layouts",
    "rwcache-schemes",
];

#[test]
fn the_report_renders_in_chromium_answer_first_with_no_markup_and_nothing_fetched() {
    let Some(bin) = need_chromium() else { return };
    // A machine without SMT (every HT row "not measured here") and one with it.
    for (cores, tpc, shot) in [(2, 1, "report-no-smt.png"), (4, 2, "report.png")] {
        let r = crate::study::fake_report(cores, tpc, &Quiet);
        let dir = tempfile::tempdir().unwrap();
        report::write_all(&r, dir.path()).unwrap();
        let p = load(&bin, &dir.path().join("report.html"), shot);
        check(shot, &p);
        check_layout(shot, &bin, &dir.path().join("report.html"));
        for c in CHARTS {
            assert!(
                p.dom.contains(&format!("data-chart=\"{c}\"")),
                "{shot}: chart {c} missing from the DOM"
            );
        }
        assert!(p.dom.contains("id=\"verdict\""), "{shot}");
    }
}

#[test]
fn the_report_rendered_again_by_smtlab_report_reads_the_same_in_chromium() {
    let Some(bin) = need_chromium() else { return };
    // `smtlab report` from a results.json alone (what a user does with a copied file).
    let r = crate::study::fake_report(2, 1, &Quiet);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("results.json");
    std::fs::write(&json, r.to_json().unwrap()).unwrap();
    Command::cargo_bin("smtlab")
        .unwrap()
        .arg("report")
        .arg(&json)
        .assert()
        .success();
    let p = load(
        &bin,
        &dir.path().join("report.html"),
        "report-rerendered.png",
    );
    check("smtlab report", &p);
}

#[test]
fn the_fleet_page_renders_in_chromium_answer_first_with_no_markup_and_nothing_fetched() {
    let Some(bin) = need_chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    smtlab::fleet::fixture::write_test_fleet(&dir.path().join("fleet")).unwrap();
    Command::cargo_bin("smtlab")
        .unwrap()
        .current_dir(dir.path())
        .args(["merge", "fleet", "--out", "out"])
        .assert()
        .success();
    let p = load(&bin, &dir.path().join("out/fleet.html"), "fleet.png");
    check("fleet.html", &p);
    check_layout("fleet.html", &bin, &dir.path().join("out/fleet.html"));
    // The hosts whose studies ran no command of their own: nothing asked, nothing failed.
    assert!(
        !p.text.contains("could measure it: no command was given"),
        "{}",
        p.text
    );
}

#[test]
fn the_checks_find_markup_entities_and_requests_on_a_page_made_to_fail_them() {
    let Some(bin) = need_chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("bad.html");
    std::fs::write(
        &html,
        "<!DOCTYPE html><html><head><style>p{color:red}</style></head><body>\
         <p>A &amp; B, 1 &lt; 2: what a reader should see.</p>\
         <p>raw `--db postgres-managed` and **bold** and &amp;amp; escaped twice</p>\
         <table><tr><td>not the answers</td></tr></table>\
         <table class=\"answers\"><tr><td>keep HT on</td></tr></table>\
         <img src=\"https://example.com/x.png\">\
         <script>fetch('http://smtlab.invalid/beacon').catch(() => {})</script>\
         </body></html>",
    )
    .unwrap();
    let p = load(&bin, &html, "self-check-of-a-bad-page.png");
    assert!(p.text.contains("A & B, 1 < 2"), "{}", p.text);
    let s = slips(&p.text);
    for needle in ["\"`\"", "\"**\"", "\"&amp;\""] {
        assert!(s.iter().any(|l| l.starts_with(needle)), "{needle}: {s:?}");
    }
    assert_eq!(
        s.len(),
        5,
        "two backticks, two **, one &amp; and nothing else: {s:?}"
    );
    let mut left = p.left.clone();
    left.sort();
    assert_eq!(
        left,
        ["http://smtlab.invalid/beacon", "https://example.com/x.png"]
    );
    assert_eq!(external_references(&p.dom).len(), 1, "the img");
    let r = std::panic::catch_unwind(|| check("bad.html", &p));
    assert!(r.is_err(), "the page fails the checks");
}
