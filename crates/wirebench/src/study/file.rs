//! The study file (TOML): parsed with spans, so that every refusal names the file, the
//! line and the key, and checked completely before anything is built. `studies/README.md`
//! documents the format with a commented example.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use toml::{Spanned, Value};
use wirebench_model::study::{
    Condition, Expectation, FigureName, Level, StudyFactor, TestbedFactor,
};

use super::expect;
use super::levels::{study_factor, test_factor, testbed_factor, testbed_value};
use wirebench_model::sweep::{FactorName, FactorValue};

/// Largest MTU a veth device takes (`ETH_MAX_MTU`).
pub const MAX_MTU: u64 = 65_535;
/// Smallest MTU IPv4 works with.
pub const MIN_MTU: u64 = 68;
/// Most cells a study may have.
pub const MAX_CELLS: usize = 1_000;

/// A refusal: where in the file, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct FileError {
    /// The file as given.
    pub file: String,
    /// 1-based line (0: the file as a whole).
    pub line: usize,
    /// The key concerned (dotted), if any.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = wirebench_model::text::escape(&self.message);
        match (self.line, self.key.is_empty()) {
            (0, true) => write!(f, "{}: {text}", self.file),
            (0, false) => write!(f, "{}: {}: {text}", self.file, self.key),
            (l, true) => write!(f, "{}:{l}: {text}", self.file),
            (l, false) => write!(f, "{}:{l}: {}: {text}", self.file, self.key),
        }
    }
}

/// Study-wide options of the points' sweeps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StudyOptions {
    /// `--point-time`, seconds.
    pub point_time_s: Option<f64>,
    /// `--max-point-time`, seconds.
    pub max_point_time_s: Option<f64>,
    /// `--min-count`.
    pub min_count: Option<u64>,
    /// `-t`: every point measured exactly this long, seconds.
    pub time_s: Option<f64>,
    /// Re-measure dip candidates (the sweep's default: on).
    pub remeasure: bool,
    /// NetPIPE perturbation of message-size factors, bytes (a study's default: 0, the
    /// figures are at the sizes the file names).
    pub perturb_bytes: u64,
    /// How many times every cell's points are measured, in rounds interleaved across the
    /// cells (`repeat`; default 1).
    pub repeat: u32,
}

/// The most rounds a study may ask for.
pub const MAX_REPEAT: u32 = 100;

/// One test of the study.
#[derive(Debug, Clone, PartialEq)]
pub struct TestEntry {
    /// Its label (unique).
    pub label: String,
    /// `stream`, `rr`, `crr` or `udp`.
    pub command: String,
    /// Its flags.
    pub args: Vec<String>,
    /// Its sweep factors and their values as the sweep takes them (`copy,sendfile`).
    pub factors: Vec<(FactorName, String)>,
    /// Line of its `[[test]]` table.
    pub line: usize,
    /// Only in the explicit cells with these labels (`None`: every cell).
    pub cells: Option<Vec<String>>,
}

/// Test flags added in the cells whose testbed meets the conditions.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Only for this test (label), or every test.
    pub test: Option<String>,
    /// Conditions on testbed levels.
    pub when: Vec<Condition>,
    /// Flags added.
    pub args: Vec<String>,
}

/// A testbed cell: levels (fixed ones included) and flags of its own.
#[derive(Debug, Clone, PartialEq)]
pub struct CellSpec {
    /// Label of an explicit cell.
    pub label: Option<String>,
    /// The testbed levels, in [`TestbedFactor`] order.
    pub levels: Vec<Level>,
    /// Test flags of the cell (explicit cells' `args`).
    pub args: Vec<String>,
}

/// A table (and later a figure) the study asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureSpec {
    /// Title.
    pub title: String,
    /// The test (label), or the first test.
    pub test: Option<String>,
    /// The x factor (rows).
    pub x: StudyFactor,
    /// The figure shown.
    pub y: FigureName,
}

/// A checked study file.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyFile {
    /// The file as given.
    pub path: String,
    /// Its text.
    pub text: String,
    /// Title.
    pub title: String,
    /// The seed figure it mirrors.
    pub seed: Option<String>,
    /// Options.
    pub options: StudyOptions,
    /// The cells, in running order.
    pub cells: Vec<CellSpec>,
    /// The factors that vary between cells.
    pub varying: Vec<TestbedFactor>,
    /// The tests.
    pub tests: Vec<TestEntry>,
    /// Rules.
    pub rules: Vec<Rule>,
    /// Expectations.
    pub expectations: Vec<Expectation>,
    /// Tables.
    pub figures: Vec<FigureSpec>,
}

pub(super) type Table = BTreeMap<Spanned<String>, Spanned<Value>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    title: Spanned<String>,
    seed: Option<String>,
    /// Free text for the reader; not used.
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(default)]
    options: Option<RawOptions>,
    #[serde(default)]
    testbed: Table,
    #[serde(default)]
    factors: Table,
    #[serde(default)]
    cell: Vec<Spanned<Table>>,
    #[serde(default)]
    test: Vec<Spanned<RawTest>>,
    #[serde(default)]
    rule: Vec<Spanned<expect::RawRule>>,
    #[serde(default)]
    expect: Vec<Spanned<expect::RawExpect>>,
    #[serde(default)]
    figure: Vec<Spanned<RawFigure>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOptions {
    point_time: Option<f64>,
    max_point_time: Option<f64>,
    min_count: Option<u64>,
    time: Option<f64>,
    remeasure: Option<bool>,
    perturb: Option<u64>,
    repeat: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTest {
    command: Spanned<String>,
    label: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    factors: Table,
    cells: Option<Spanned<Vec<String>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFigure {
    title: String,
    test: Option<Spanned<String>>,
    x: Spanned<String>,
    y: Spanned<String>,
}

/// The checker: the file's name and text, to turn spans into lines.
pub(super) struct Ctx<'a> {
    path: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn line(&self, span: std::ops::Range<usize>) -> usize {
        let end = span.start.min(self.text.len());
        self.text[..end].matches('\n').count() + 1
    }

    pub(super) fn err(
        &self,
        span: std::ops::Range<usize>,
        key: &str,
        message: impl Into<String>,
    ) -> FileError {
        FileError {
            file: self.path.to_string(),
            line: self.line(span),
            key: key.to_string(),
            message: message.into(),
        }
    }
}

/// Parses and checks a study file.
pub fn parse(path: &str, text: &str) -> Result<StudyFile, FileError> {
    let cx = Ctx { path, text };
    let mut raw: RawFile = toml::from_str(text).map_err(|e| FileError {
        file: path.to_string(),
        line: e.span().map_or(0, |s| cx.line(s)),
        key: String::new(),
        message: format!("not a valid study file: {}", e.message()),
    })?;
    let options = options(&cx, raw.options.take())?;
    let fixed = testbed_levels(&cx, "testbed", &raw.testbed, false)?;
    let (cells, varying) = cells(&cx, &raw, &fixed)?;
    let tests = tests(&cx, &raw.test, &cells)?;
    let labels: Vec<&str> = tests.iter().map(|t| t.label.as_str()).collect();
    let check_test = |t: &Option<Spanned<String>>, key: &str| check_test(&cx, &labels, t, key);
    let rules = expect::rules(&cx, &raw.rule, &check_test)?;
    let expectations = expect::expectations(&cx, &raw.expect, &check_test)?;
    let mut figures = Vec::new();
    for f in &raw.figure {
        let f = f.get_ref();
        figures.push(FigureSpec {
            title: f.title.clone(),
            test: check_test(&f.test, "figure.test")?,
            x: factor_key(&cx, &f.x, "figure.x")?,
            y: figure_name(&cx, &f.y, "figure.y")?,
        });
    }
    Ok(StudyFile {
        path: path.to_string(),
        text: text.to_string(),
        title: raw.title.into_inner(),
        seed: raw.seed,
        options,
        cells,
        varying,
        tests,
        rules,
        expectations,
        figures,
    })
}

/// The label a rule, an expectation or a figure names: one of the tests' (`labels`).
fn check_test(
    cx: &Ctx<'_>,
    labels: &[&str],
    t: &Option<Spanned<String>>,
    key: &str,
) -> Result<Option<String>, FileError> {
    match t {
        Some(s) if !labels.contains(&s.get_ref().as_str()) => Err(cx.err(
            s.span(),
            key,
            format!(
                "no test labelled {:?} (tests: {})",
                s.get_ref(),
                labels.join(", ")
            ),
        )),
        Some(s) => Ok(Some(s.get_ref().clone())),
        None => Ok(None),
    }
}

fn options(cx: &Ctx<'_>, o: Option<RawOptions>) -> Result<StudyOptions, FileError> {
    let Some(o) = o else {
        return Ok(StudyOptions {
            remeasure: true,
            repeat: 1,
            ..StudyOptions::default()
        });
    };
    for (key, v) in [
        ("options.point_time", o.point_time),
        ("options.max_point_time", o.max_point_time),
        ("options.time", o.time),
    ] {
        if let Some(v) = v {
            if !(v.is_finite() && v > 0.0 && v <= 3600.0) {
                return Err(FileError {
                    file: cx.path.to_string(),
                    line: 0,
                    key: key.into(),
                    message: format!("{v} is not a time in (0, 3600] seconds"),
                });
            }
        }
    }
    let repeat = o.repeat.unwrap_or(1);
    if !(1..=MAX_REPEAT).contains(&repeat) {
        return Err(FileError {
            file: cx.path.to_string(),
            line: 0,
            key: "options.repeat".into(),
            message: format!("{repeat} is not a number of rounds in 1..={MAX_REPEAT}"),
        });
    }
    Ok(StudyOptions {
        repeat,
        point_time_s: o.point_time,
        max_point_time_s: o.max_point_time,
        min_count: o.min_count,
        time_s: o.time,
        remeasure: o.remeasure.unwrap_or(true),
        perturb_bytes: o.perturb.unwrap_or(0),
    })
}

pub(super) fn factor_key(
    cx: &Ctx<'_>,
    s: &Spanned<String>,
    key: &str,
) -> Result<StudyFactor, FileError> {
    let k = s.get_ref();
    study_factor(k).ok_or_else(|| cx.err(s.span(), key, format!("unknown factor {k:?}")))
}

pub(super) fn figure_name(
    cx: &Ctx<'_>,
    s: &Spanned<String>,
    key: &str,
) -> Result<FigureName, FileError> {
    FigureName::ALL
        .into_iter()
        .find(|f| f.key() == s.get_ref())
        .ok_or_else(|| {
            let names: Vec<&str> = FigureName::ALL.iter().map(|f| f.key()).collect();
            cx.err(
                s.span(),
                key,
                format!(
                    "no figure {:?} (figures: {})",
                    s.get_ref(),
                    names.join(", ")
                ),
            )
        })
}

/// Levels of a table of testbed settings (`[testbed]`, an explicit cell); with `lists`,
/// each value may be an array (`[factors]`) and every level is returned.
fn testbed_levels(
    cx: &Ctx<'_>,
    section: &str,
    t: &Table,
    lists: bool,
) -> Result<Vec<(TestbedFactor, Vec<FactorValue>)>, FileError> {
    let mut out = Vec::new();
    for (k, v) in t {
        let key = format!("{section}.{}", k.get_ref());
        let f = testbed_factor(k.get_ref()).ok_or_else(|| {
            let names: Vec<&str> = TestbedFactor::ALL.iter().map(|f| f.key()).collect();
            cx.err(
                k.span(),
                &key,
                format!(
                    "unknown testbed factor (testbed factors: {})",
                    names.join(", ")
                ),
            )
        })?;
        let items: Vec<Value> = match (v.get_ref(), lists) {
            (Value::Array(a), true) => a.clone(),
            (other, _) => vec![other.clone()],
        };
        if items.is_empty() {
            return Err(cx.err(v.span(), &key, "no values"));
        }
        let mut values = Vec::new();
        for item in &items {
            let value = testbed_value(f, item).map_err(|m| cx.err(v.span(), &key, m))?;
            if values.contains(&value) {
                return Err(cx.err(v.span(), &key, format!("{} given twice", value.arg())));
            }
            values.push(value);
        }
        out.push((f, values));
    }
    Ok(out)
}

fn cells(
    cx: &Ctx<'_>,
    raw: &RawFile,
    fixed: &[(TestbedFactor, Vec<FactorValue>)],
) -> Result<(Vec<CellSpec>, Vec<TestbedFactor>), FileError> {
    let crossed = testbed_levels(cx, "factors", &raw.factors, true)?;
    if !crossed.is_empty() && !raw.cell.is_empty() {
        return Err(cx.err(
            raw.cell[0].span(),
            "cell",
            "give either [factors] (a crossed grid) or [[cell]] (an explicit list), not both",
        ));
    }
    for (f, _) in &crossed {
        if fixed.iter().any(|(g, _)| g == f) {
            let k = raw.factors.keys().find(|k| k.get_ref() == f.key());
            return Err(cx.err(
                k.map_or(0..0, |k| k.span()),
                &format!("factors.{}", f.key()),
                "also fixed in [testbed]",
            ));
        }
    }
    let base: Vec<Level> = fixed
        .iter()
        .map(|(f, v)| Level {
            factor: StudyFactor::Testbed(*f),
            value: v[0].clone(),
        })
        .collect();
    let mut cells = Vec::new();
    if raw.cell.is_empty() {
        let mut grid: Vec<Vec<Level>> = vec![base.clone()];
        for (f, values) in &crossed {
            grid = grid
                .into_iter()
                .flat_map(|g| {
                    values.iter().map(move |v| {
                        let mut g = g.clone();
                        g.push(Level {
                            factor: StudyFactor::Testbed(*f),
                            value: v.clone(),
                        });
                        g
                    })
                })
                .collect();
            if grid.len() > MAX_CELLS {
                return Err(cx.err(0..0, "factors", format!("more than {MAX_CELLS} cells")));
            }
        }
        cells = grid
            .into_iter()
            .map(|mut levels| {
                levels.sort_by_key(|l| l.factor);
                CellSpec {
                    label: None,
                    levels,
                    args: Vec::new(),
                }
            })
            .collect();
    } else {
        for c in &raw.cell {
            let mut t = c.get_ref().clone();
            let label = take_string(cx, &mut t, "cell.label")?;
            let args = match t.remove("args") {
                Some(v) => string_list(cx, &v, "cell.args")?,
                None => Vec::new(),
            };
            let mut levels = base.clone();
            for (f, v) in testbed_levels(cx, "cell", &t, false)? {
                levels.retain(|l| l.factor != StudyFactor::Testbed(f));
                levels.push(Level {
                    factor: StudyFactor::Testbed(f),
                    value: v[0].clone(),
                });
            }
            levels.sort_by_key(|l| l.factor);
            cells.push(CellSpec {
                label,
                levels,
                args,
            });
        }
    }
    let mut varying: Vec<TestbedFactor> = Vec::new();
    for f in TestbedFactor::ALL {
        let values: Vec<Option<&FactorValue>> = cells
            .iter()
            .map(|c| {
                c.levels
                    .iter()
                    .find(|l| l.factor == StudyFactor::Testbed(f))
                    .map(|l| &l.value)
            })
            .collect();
        if values.windows(2).any(|w| w[0] != w[1]) {
            varying.push(f);
        }
    }
    Ok((cells, varying))
}

fn take_string(cx: &Ctx<'_>, t: &mut Table, key: &str) -> Result<Option<String>, FileError> {
    match t.remove("label") {
        Some(v) => match v.get_ref() {
            Value::String(s) => Ok(Some(s.clone())),
            _ => Err(cx.err(v.span(), key, "must be a string")),
        },
        None => Ok(None),
    }
}

fn string_list(cx: &Ctx<'_>, v: &Spanned<Value>, key: &str) -> Result<Vec<String>, FileError> {
    match v.get_ref() {
        Value::Array(a) => a
            .iter()
            .map(|x| match x {
                Value::String(s) => Ok(s.clone()),
                _ => Err(cx.err(v.span(), key, "must be a list of strings")),
            })
            .collect(),
        _ => Err(cx.err(v.span(), key, "must be a list of strings")),
    }
}

fn tests(
    cx: &Ctx<'_>,
    raw: &[Spanned<RawTest>],
    cells: &[CellSpec],
) -> Result<Vec<TestEntry>, FileError> {
    if raw.is_empty() {
        return Err(cx.err(0..0, "test", "a study runs at least one [[test]]"));
    }
    let mut out: Vec<TestEntry> = Vec::new();
    for t in raw {
        let line = cx.line(t.span());
        let t = t.get_ref();
        let command = t.command.get_ref().clone();
        if !["stream", "rr", "crr", "udp"].contains(&command.as_str()) {
            return Err(cx.err(
                t.command.span(),
                "test.command",
                format!("{command:?} is not a test: stream, rr, crr or udp"),
            ));
        }
        let label = t.label.clone().unwrap_or_else(|| command.clone());
        if out.iter().any(|o| o.label == label) {
            return Err(cx.err(
                t.command.span(),
                "test.label",
                format!("two tests labelled {label:?}"),
            ));
        }
        if let Some(flag) = study_owned_flag(&command, &t.args) {
            return Err(cx.err(
                t.command.span(),
                "test.args",
                format!("{flag} is set by the study"),
            ));
        }
        let mut factors = Vec::new();
        for (k, v) in &t.factors {
            let key = format!("test.factors.{}", k.get_ref());
            let f = test_factor(k.get_ref())
                .ok_or_else(|| cx.err(k.span(), &key, "unknown test factor"))?;
            let text = match v.get_ref() {
                Value::String(s) => s.clone(),
                Value::Integer(i) => i.to_string(),
                Value::Array(a) if !a.is_empty() => a
                    .iter()
                    .map(|x| match x {
                        Value::String(s) => Ok(s.clone()),
                        Value::Integer(i) => Ok(i.to_string()),
                        _ => Err(cx.err(v.span(), &key, "values are strings or integers")),
                    })
                    .collect::<Result<Vec<_>, _>>()?
                    .join(","),
                _ => return Err(cx.err(v.span(), &key, "a list of values or a range string")),
            };
            factors.push((f, text));
        }
        if let Some(only) = &t.cells {
            for l in only.get_ref() {
                if !cells.iter().any(|c| c.label.as_deref() == Some(l.as_str())) {
                    return Err(cx.err(
                        only.span(),
                        "test.cells",
                        format!("no [[cell]] labelled {l:?}"),
                    ));
                }
            }
        }
        out.push(TestEntry {
            label,
            command,
            args: t.args.clone(),
            factors,
            line,
            cells: t.cells.as_ref().map(|c| c.get_ref().clone()),
        });
    }
    Ok(out)
}

/// The flag among `args` that the study sets itself (server, port, output, output format),
/// in any spelling the command line accepts (`-o F`, `-oF`, `--output=F`, `-4oF`): read by
/// parsing the test's command line; if it does not parse, by the flags' spellings.
fn study_owned_flag(command: &str, args: &[String]) -> Option<&'static str> {
    use crate::args::{TestCommand, TestLine};
    use clap::Parser as _;
    let full = ["wirebench", command]
        .into_iter()
        .map(String::from)
        .chain(args.iter().cloned());
    if let Ok(cli) = TestLine::try_parse_from(full) {
        let c = match cli.test {
            TestCommand::Stream(a) => a.c,
            TestCommand::Rr(a) => a.c,
            TestCommand::Crr(a) => a.c,
            TestCommand::Udp(a) => a.c,
        };
        return [
            (c.host.is_some(), "-H/--host"),
            (c.port.is_some(), "-p/--port"),
            (c.output.is_some(), "-o/--output"),
            (c.json, "--json"),
            (c.json_stream, "--json-stream"),
            (c.csv, "--csv"),
        ]
        .into_iter()
        .find_map(|(set, flag)| set.then_some(flag));
    }
    args.iter().find_map(|a| {
        let long = a.split('=').next().unwrap_or(a);
        match long {
            "--host" => return Some("-H/--host"),
            "--port" => return Some("-p/--port"),
            "--output" => return Some("-o/--output"),
            "--json" => return Some("--json"),
            "--json-stream" => return Some("--json-stream"),
            "--csv" => return Some("--csv"),
            _ => {}
        }
        let short = a.strip_prefix('-').filter(|r| !r.starts_with('-'))?;
        match short.chars().next()? {
            'H' => Some("-H/--host"),
            'p' => Some("-p/--port"),
            'o' => Some("-o/--output"),
            _ => None,
        }
    })
}
