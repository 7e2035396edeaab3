//! A self-contained one-file HTML report: inline CSS, inline SVG figures, no script, no font
//! file, no external reference. A Content-Security-Policy meta tag forbids any load the page
//! might still attempt (a browser logs a violation, which [`crate::browser`] reports). Every
//! string given to the builder is HTML-escaped; only [`Svg`] made by this crate's renderers
//! is inlined as markup. The page is also well-formed XML (void elements self-closed), so
//! tests can parse it with an XML parser.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::svg::{escape, Svg};

/// The whole page.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Page title (`<h1>` and `<title>`).
    pub title: String,
    /// Line under the title: what, where, when, which version.
    pub subtitle: String,
    /// Sections in order.
    pub sections: Vec<Section>,
}

/// A titled section.
#[derive(Clone, Debug, Default)]
pub struct Section {
    /// Section title (`<h2>`).
    pub title: String,
    /// Contents in order.
    pub blocks: Vec<Block>,
}

impl Section {
    /// A section with a title and no content yet.
    pub fn new(title: impl Into<String>) -> Section {
        Section {
            title: title.into(),
            blocks: vec![],
        }
    }

    /// Appends a block.
    pub fn push(&mut self, b: Block) -> &mut Section {
        self.blocks.push(b);
        self
    }
}

/// Whether something holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// It holds (✓).
    Holds,
    /// It does not hold (✗).
    DoesNotHold,
    /// The data cannot tell (?).
    Inconclusive,
    /// A finding, neither good nor bad: what limited a test (→).
    Finding,
}

impl Outcome {
    /// Symbol shown with the colour (so the page reads in grey and for colour-blind readers).
    pub fn symbol(self) -> &'static str {
        match self {
            Outcome::Holds => "✓",
            Outcome::DoesNotHold => "✗",
            Outcome::Inconclusive => "?",
            Outcome::Finding => "→",
        }
    }

    /// Words shown with the symbol.
    pub fn text(self) -> &'static str {
        match self {
            Outcome::Holds => "holds",
            Outcome::DoesNotHold => "does not hold",
            Outcome::Inconclusive => "inconclusive",
            Outcome::Finding => "verdict",
        }
    }

    fn class(self) -> &'static str {
        match self {
            Outcome::Holds => "holds",
            Outcome::DoesNotHold => "fails",
            Outcome::Inconclusive | Outcome::Finding => "unsure",
        }
    }
}

/// A key–value table with one value column per end (e.g. client, server). Rows whose values
/// differ between the columns are marked.
#[derive(Clone, Debug, Default)]
pub struct KeyValueTable {
    /// Caption above the table (may be empty).
    pub caption: String,
    /// Headers of the value columns; empty for a single unnamed column.
    pub columns: Vec<String>,
    /// `(key, values)`; `values` has one entry per column.
    pub rows: Vec<(String, Vec<String>)>,
}

/// A column of a [`DataTable`].
#[derive(Clone, Debug, Default)]
pub struct Column {
    /// Header text.
    pub name: String,
    /// Unit shown in the header, e.g. "Gbit/s" (empty for none).
    pub unit: String,
    /// Right-aligned with tabular figures.
    pub numeric: bool,
}

impl Column {
    /// A text column.
    pub fn text(name: impl Into<String>) -> Column {
        Column {
            name: name.into(),
            unit: String::new(),
            numeric: false,
        }
    }

    /// A numeric column with a unit.
    pub fn num(name: impl Into<String>, unit: impl Into<String>) -> Column {
        Column {
            name: name.into(),
            unit: unit.into(),
            numeric: true,
        }
    }
}

/// A table of (pre-formatted) values.
#[derive(Clone, Debug, Default)]
pub struct DataTable {
    /// Caption above the table (may be empty).
    pub caption: String,
    /// Columns.
    pub columns: Vec<Column>,
    /// Rows of cells, one per column (missing cells are left empty).
    pub rows: Vec<Vec<String>>,
}

/// The conclusion of a section or report, shown as a callout.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// Colour, symbol and word of the callout.
    pub outcome: Outcome,
    /// One-line conclusion.
    pub headline: String,
    /// Supporting detail (may be empty).
    pub detail: String,
}

/// One headline figure: what it counts, its value with the unit, and where and over which
/// window it was measured.
#[derive(Clone, Debug, Default)]
pub struct Stat {
    /// What the figure is, e.g. "throughput forward".
    pub label: String,
    /// The value with its unit, e.g. "19.89 Gbit/s".
    pub value: String,
    /// Where and how it was measured, e.g. "receiver, 2.000 s window".
    pub note: String,
}

/// One expectation checked against the data.
#[derive(Clone, Debug)]
pub struct Expectation {
    /// What was expected, e.g. "throughput ≥ 90 % of line rate".
    pub statement: String,
    /// Whether it held.
    pub outcome: Outcome,
    /// The figures behind the outcome.
    pub evidence: String,
}

/// Contents of a section.
#[derive(Clone, Debug)]
pub enum Block {
    /// A sub-heading (`<h3>`).
    Heading(String),
    /// A paragraph of plain text.
    Paragraph(String),
    /// Key–value pairs (environment of both ends).
    KeyValue(KeyValueTable),
    /// Numeric data.
    Table(DataTable),
    /// A command or other literal text.
    Code {
        /// Caption (may be empty), e.g. "reproduce".
        caption: String,
        /// The text, shown verbatim.
        code: String,
    },
    /// Warnings, listed.
    Warnings(Vec<String>),
    /// A verdict callout.
    Verdict(Verdict),
    /// A figure with its caption.
    Figure {
        /// The drawing.
        svg: Svg,
        /// Caption (may be empty).
        caption: String,
    },
    /// Expectations and whether they hold.
    Expectations(Vec<Expectation>),
    /// Headline figures as tiles, with blocks (the verdict) beside them.
    Headline {
        /// The figures.
        stats: Vec<Stat>,
        /// Shown beside the figures (below them on a narrow page).
        beside: Vec<Block>,
    },
}

/// The page's style sheet.
const CSS: &str = r#"
:root{--ink:#1f2328;--muted:#59636e;--line:#d1d9e0;--soft:#f6f8fa;--accent:#0b5cad;
--ok:#1a7f37;--ok-bg:#dafbe1;--bad:#c21d2a;--bad-bg:#ffebe9;--warn:#7d5400;--warn-bg:#fff8c5;
--unsure:#57606a;--unsure-bg:#eef1f4}
*{box-sizing:border-box}
html{background:#fff}
body{margin:0;color:var(--ink);font:15px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Liberation Sans",sans-serif;-webkit-text-size-adjust:100%}
main{max-width:1000px;margin:0 auto;padding:28px 24px 48px}
header{border-bottom:2px solid var(--ink);padding-bottom:10px;margin-bottom:20px}
h1{font-size:26px;line-height:1.25;margin:0 0 4px;letter-spacing:-.01em}
.meta{color:var(--muted);margin:0;font-size:14px}
h2{font-size:20px;margin:34px 0 12px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:16px;margin:22px 0 8px}
p{margin:8px 0 12px;max-width:80ch}
nav.toc{background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:10px 16px;margin:0 0 8px;font-size:14px}
nav.toc ol{margin:4px 0;padding-left:22px;columns:2;column-gap:32px}
nav.toc a{color:var(--accent);text-decoration:none}
nav.toc a:hover{text-decoration:underline}
.caption{font-weight:600;font-size:14px;margin:16px 0 6px}
.table-wrap{overflow-x:auto;margin:4px 0 16px}
table{border-collapse:collapse;font-size:14px;min-width:40%}
th,td{padding:5px 12px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
thead th{border-bottom:2px solid #8c959f;font-weight:600;white-space:nowrap;background:#fff}
tbody tr:nth-child(even){background:#fafbfc}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
th .unit{font-weight:400;color:var(--muted)}
table.kv th[scope=row]{font-weight:500;color:var(--muted);white-space:nowrap}
table.kv td{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono","DejaVu Sans Mono",monospace;font-size:13px}
table.kv tr.differs td{background:var(--warn-bg)}
.ne{color:var(--warn);font-weight:700;font-family:system-ui,sans-serif;margin-left:4px}
pre{background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:10px 14px;overflow-x:auto;font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono","DejaVu Sans Mono",monospace;white-space:pre-wrap;word-break:break-all;margin:4px 0 16px}
.warnings{background:var(--warn-bg);border:1px solid #e6d36f;border-left:4px solid #bf8700;border-radius:6px;padding:8px 14px 8px 12px;margin:8px 0 16px}
.warnings .title{font-weight:600;color:var(--warn);margin:0 0 2px}
.warnings ul{margin:2px 0;padding-left:22px}
.headline-row{display:flex;flex-wrap:wrap;gap:6px 20px;align-items:flex-start;margin:8px 0 12px}
.stats{flex:1 1 380px;display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:8px;margin:12px 0}
.stat{border:1px solid var(--line);border-radius:6px;padding:6px 10px;background:var(--soft)}
.stat dt{font-size:13px;color:var(--muted)}
.stat dd{margin:0}
.stat .value{display:block;font-size:20px;font-weight:650;font-variant-numeric:tabular-nums}
.stat .note{display:block;font-size:12px;color:var(--muted)}
.beside{flex:1 1 380px;min-width:0}
.verdict{border:1px solid;border-left-width:5px;border-radius:6px;padding:10px 16px;margin:12px 0 18px}
.verdict .badge{display:inline-block;font-weight:700;font-size:13px;letter-spacing:.04em;text-transform:uppercase;margin-right:8px}
.verdict .headline{font-weight:600;font-size:16px}
.verdict p{margin:6px 0 0;white-space:pre-line}
.holds{color:var(--ok)} .fails{color:var(--bad)} .unsure{color:var(--unsure)}
.verdict.holds{background:var(--ok-bg);border-color:var(--ok)}
.verdict.fails{background:var(--bad-bg);border-color:var(--bad)}
.verdict.unsure{background:var(--unsure-bg);border-color:#8c959f}
.verdict .headline,.verdict p{color:var(--ink)}
td.outcome{font-weight:600;white-space:nowrap}
td.outcome .sym{display:inline-block;width:1.2em;text-align:center;font-weight:700}
figure{margin:10px 0 22px;break-inside:avoid}
figure .fig{border:1px solid var(--line);border-radius:6px;padding:6px;background:#fff}
figure svg{display:block;max-width:100%;height:auto;margin:0 auto}
figcaption{color:var(--muted);font-size:13.5px;margin-top:6px}
footer{margin-top:40px;padding-top:10px;border-top:1px solid var(--line);color:var(--muted);font-size:12.5px}
@media print{
 body{font-size:10.5pt}
 main{max-width:none;padding:0}
 nav.toc{display:none}
 h2{break-after:avoid}
 figure,table,.verdict,.warnings,pre{break-inside:avoid}
 tbody tr:nth-child(even){background:none}
 .verdict,.warnings,table.kv tr.differs td{-webkit-print-color-adjust:exact;print-color-adjust:exact}
 a{color:inherit;text-decoration:none}
}
"#;

/// The Content-Security-Policy of every report: nothing may load but inline style and
/// `data:` images.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

impl Report {
    /// A report with a title and subtitle and no sections yet.
    pub fn new(title: impl Into<String>, subtitle: impl Into<String>) -> Report {
        Report {
            title: title.into(),
            subtitle: subtitle.into(),
            sections: vec![],
        }
    }

    /// The complete page.
    pub fn to_html(&self) -> String {
        let mut o = String::with_capacity(64 * 1024);
        let _ = write!(
            o,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n\
             <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\"/>\n\
             <meta name=\"generator\" content=\"wirebench-plot\"/>\n\
             <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n\
             <header><h1>{}</h1>",
            escape(&self.title),
            escape(&self.title)
        );
        if !self.subtitle.is_empty() {
            let _ = write!(o, "<p class=\"meta\">{}</p>", escape(&self.subtitle));
        }
        o.push_str("</header>\n");
        if self.sections.len() >= 3 {
            o.push_str("<nav class=\"toc\" aria-label=\"Contents\"><strong>Contents</strong><ol>");
            for (i, s) in self.sections.iter().enumerate() {
                let _ = write!(
                    o,
                    "<li><a href=\"#s{}\">{}</a></li>",
                    i + 1,
                    escape(&s.title)
                );
            }
            o.push_str("</ol></nav>\n");
        }
        for (i, s) in self.sections.iter().enumerate() {
            let _ = write!(
                o,
                "<section id=\"s{}\">\n<h2>{}</h2>\n",
                i + 1,
                escape(&s.title)
            );
            for b in &s.blocks {
                block(&mut o, b);
            }
            o.push_str("</section>\n");
        }
        o.push_str(
            "<footer>Generated by wirebench. This page is self-contained: no scripts, fonts or \
             other files are loaded.</footer>\n</main>\n</body>\n</html>\n",
        );
        o
    }
}

fn caption(o: &mut String, c: &str) {
    if !c.is_empty() {
        let _ = write!(o, "<p class=\"caption\">{}</p>", escape(c));
    }
}

fn block(o: &mut String, b: &Block) {
    match b {
        Block::Heading(t) => {
            let _ = writeln!(o, "<h3>{}</h3>", escape(t));
        }
        Block::Paragraph(t) => {
            let _ = writeln!(o, "<p>{}</p>", escape(t));
        }
        Block::KeyValue(t) => key_value(o, t),
        Block::Table(t) => data_table(o, t),
        Block::Code { caption: c, code } => {
            caption(o, c);
            let _ = writeln!(o, "<pre><code>{}</code></pre>", escape(code));
        }
        Block::Warnings(ws) => {
            if ws.is_empty() {
                return;
            }
            let _ = write!(
                o,
                "<div class=\"warnings\" role=\"note\"><p class=\"title\">⚠ {} warning{}</p><ul>",
                ws.len(),
                if ws.len() == 1 { "" } else { "s" }
            );
            for w in ws {
                let _ = write!(o, "<li>{}</li>", escape(w));
            }
            o.push_str("</ul></div>\n");
        }
        Block::Verdict(v) => {
            let _ = write!(
                o,
                "<div class=\"verdict {cls}\" role=\"status\"><span class=\"badge {cls}\">{} {}</span>\
                 <span class=\"headline\">{}</span>",
                v.outcome.symbol(),
                escape(v.outcome.text()),
                escape(&v.headline),
                cls = v.outcome.class()
            );
            if !v.detail.is_empty() {
                let _ = write!(o, "<p>{}</p>", escape(&v.detail));
            }
            o.push_str("</div>\n");
        }
        Block::Figure { svg, caption: c } => {
            let _ = write!(o, "<figure><div class=\"fig\">{}</div>", svg.inline_html());
            if !c.is_empty() {
                let _ = write!(o, "<figcaption>{}</figcaption>", escape(c));
            }
            o.push_str("</figure>\n");
        }
        Block::Expectations(es) => expectations(o, es),
        Block::Headline { stats, beside } => {
            o.push_str("<div class=\"headline-row\"><dl class=\"stats\">");
            for st in stats {
                let _ = write!(
                    o,
                    "<div class=\"stat\"><dt>{}</dt><dd><span class=\"value\">{}</span>\
                     <span class=\"note\">{}</span></dd></div>",
                    escape(&st.label),
                    escape(&st.value),
                    escape(&st.note)
                );
            }
            o.push_str("</dl>");
            if !beside.is_empty() {
                o.push_str("<div class=\"beside\">");
                for b in beside {
                    block(o, b);
                }
                o.push_str("</div>");
            }
            o.push_str("</div>\n");
        }
    }
}

fn key_value(o: &mut String, t: &KeyValueTable) {
    caption(o, &t.caption);
    o.push_str("<div class=\"table-wrap\"><table class=\"kv\">");
    if !t.columns.is_empty() {
        o.push_str("<thead><tr><th></th>");
        for c in &t.columns {
            let _ = write!(o, "<th scope=\"col\">{}</th>", escape(c));
        }
        o.push_str("</tr></thead>");
    }
    o.push_str("<tbody>");
    let width = t.columns.len().max(1);
    for (k, vals) in &t.rows {
        let differs = vals.len() > 1 && vals.iter().any(|v| v != &vals[0]);
        let _ = write!(
            o,
            "<tr{}><th scope=\"row\">{}{}</th>",
            if differs { " class=\"differs\"" } else { "" },
            escape(k),
            if differs {
                "<span class=\"ne\" title=\"values differ between the ends\">≠</span>"
            } else {
                ""
            }
        );
        for i in 0..width {
            let _ = write!(
                o,
                "<td>{}</td>",
                escape(vals.get(i).map_or("", |s| s.as_str()))
            );
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>\n");
}

fn data_table(o: &mut String, t: &DataTable) {
    caption(o, &t.caption);
    o.push_str("<div class=\"table-wrap\"><table class=\"data\"><thead><tr>");
    for c in &t.columns {
        let cls = if c.numeric { " class=\"num\"" } else { "" };
        let _ = write!(o, "<th scope=\"col\"{cls}>{}", escape(&c.name));
        if !c.unit.is_empty() {
            let _ = write!(o, " <span class=\"unit\">({})</span>", escape(&c.unit));
        }
        o.push_str("</th>");
    }
    o.push_str("</tr></thead><tbody>");
    for row in &t.rows {
        o.push_str("<tr>");
        for (i, c) in t.columns.iter().enumerate() {
            let cell = row.get(i).map_or("", |s| s.as_str());
            let cls = if c.numeric { " class=\"num\"" } else { "" };
            let _ = write!(o, "<td{cls}>{}</td>", escape(cell));
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>\n");
}

fn expectations(o: &mut String, es: &[Expectation]) {
    if es.is_empty() {
        return;
    }
    let held = es.iter().filter(|e| e.outcome == Outcome::Holds).count();
    let _ = write!(
        o,
        "<p class=\"caption\">Expectations: {held} of {} hold</p>",
        es.len()
    );
    o.push_str(
        "<div class=\"table-wrap\"><table class=\"expectations\"><thead><tr>\
         <th scope=\"col\">result</th><th scope=\"col\">expectation</th>\
         <th scope=\"col\">evidence</th></tr></thead><tbody>",
    );
    for e in es {
        let _ = write!(
            o,
            "<tr><td class=\"outcome {cls}\"><span class=\"sym\">{}</span> {}</td><td>{}</td><td>{}</td></tr>",
            e.outcome.symbol(),
            escape(e.outcome.text()),
            escape(&e.statement),
            escape(&e.evidence),
            cls = e.outcome.class()
        );
    }
    o.push_str("</tbody></table></div>\n");
}
