//! A study file's rules (`[[rule]]`: flags added to a test in the cells that meet their
//! conditions) and expectations (`[[expect]]`: claims about a figure, checked after the run),
//! parsed and checked with the file's spans (see [`super::file`]).

use serde::Deserialize;
use toml::{Spanned, Value};
use wirebench_model::study::{CompareOp, Condition, Expectation, Level, StudyFactor};

use super::file::{factor_key, figure_name, Ctx, FileError, Rule, Table};
use super::levels::{level_value, study_factor};

/// Checks the test label a rule or an expectation names (see `file::check_test`).
pub(super) type CheckTest<'a> =
    dyn Fn(&Option<Spanned<String>>, &str) -> Result<Option<String>, FileError> + 'a;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRule {
    test: Option<Spanned<String>>,
    when: Spanned<OneOrMany>,
    args: Vec<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn items(&self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExpect {
    name: String,
    test: Option<Spanned<String>>,
    figure: Spanned<String>,
    #[serde(default)]
    numerator: Table,
    denominator: Option<Table>,
    #[serde(default)]
    when: Option<Spanned<OneOrMany>>,
    op: Spanned<String>,
    value: f64,
}

/// The `[[rule]]` tables, checked: testbed conditions only, at least one flag each.
pub(super) fn rules(
    cx: &Ctx<'_>,
    raw: &[Spanned<RawRule>],
    check_test: &CheckTest<'_>,
) -> Result<Vec<Rule>, FileError> {
    let mut rules = Vec::new();
    for r in raw {
        let span = r.span();
        let r = r.get_ref();
        let mut when = Vec::new();
        for c in r.when.get_ref().items() {
            let cond = condition(cx, r.when.span(), "rule.when", &c)?;
            if !matches!(cond.factor, StudyFactor::Testbed(_)) {
                return Err(cx.err(
                    r.when.span(),
                    "rule.when",
                    "a rule's conditions name testbed factors (its flags apply to whole cells)",
                ));
            }
            when.push(cond);
        }
        if r.args.is_empty() {
            return Err(cx.err(span, "rule.args", "a rule adds at least one flag"));
        }
        rules.push(Rule {
            test: check_test(&r.test, "rule.test")?,
            when,
            args: r.args.clone(),
        });
    }
    Ok(rules)
}

/// The `[[expect]]` tables, checked: a known figure and operator, levels that pick a ratio's
/// two sides, finite values.
pub(super) fn expectations(
    cx: &Ctx<'_>,
    raw: &[Spanned<RawExpect>],
    check_test: &CheckTest<'_>,
) -> Result<Vec<Expectation>, FileError> {
    let mut expectations = Vec::new();
    for e in raw {
        let span = e.span();
        let e = e.get_ref();
        let figure = figure_name(cx, &e.figure, "expect.figure")?;
        let op = CompareOp::parse(e.op.get_ref())
            .ok_or_else(|| cx.err(e.op.span(), "expect.op", "must be <, <=, >, >=, == or !="))?;
        let numerator = selector(cx, &e.numerator, "expect.numerator")?;
        let denominator = match &e.denominator {
            Some(d) => Some(selector(cx, d, "expect.denominator")?),
            None => None,
        };
        if denominator.as_ref().is_some_and(|d| d.is_empty())
            || (denominator.is_some() && numerator.is_empty())
        {
            return Err(cx.err(
                span,
                "expect",
                "a ratio needs levels that pick its numerator and its denominator",
            ));
        }
        let mut conditions = Vec::new();
        if let Some(w) = &e.when {
            for c in w.get_ref().items() {
                conditions.push(condition(cx, w.span(), "expect.when", &c)?);
            }
        }
        if !e.value.is_finite() {
            return Err(cx.err(span, "expect.value", "not a finite number"));
        }
        expectations.push(Expectation {
            name: e.name.clone(),
            test: check_test(&e.test, "expect.test")?,
            figure,
            numerator,
            denominator,
            conditions,
            op,
            value: e.value,
        });
    }
    Ok(expectations)
}

/// `factor OP value`, e.g. `mtu >= 9000`, `send_path == sendfile`.
pub(super) fn condition(
    cx: &Ctx<'_>,
    span: std::ops::Range<usize>,
    key: &str,
    text: &str,
) -> Result<Condition, FileError> {
    let bad = |m: String| cx.err(span.clone(), key, m);
    let ops = ["<=", ">=", "==", "!=", "<", ">", "="];
    let (at, op) = ops
        .iter()
        .filter_map(|o| text.find(o).map(|i| (i, *o)))
        .min_by_key(|(i, o)| (*i, std::cmp::Reverse(o.len())))
        .ok_or_else(|| bad(format!("{text:?} is not `factor OP value`")))?;
    let name = text[..at].trim();
    let value = text[at + op.len()..].trim();
    let factor =
        study_factor(name).ok_or_else(|| bad(format!("{text:?}: unknown factor {name:?}")))?;
    let op = CompareOp::parse(op).ok_or_else(|| bad(format!("{text:?}: bad operator")))?;
    let value = level_value(factor, value).map_err(|m| bad(format!("{text:?}: {m}")))?;
    Ok(Condition { factor, op, value })
}

/// `{ send_path = "sendfile" }`: the levels that pick a point.
fn selector(cx: &Ctx<'_>, t: &Table, key: &str) -> Result<Vec<Level>, FileError> {
    let mut out = Vec::new();
    for (k, v) in t {
        let key = format!("{key}.{}", k.get_ref());
        let factor = factor_key(cx, k, &key)?;
        let text = match v.get_ref() {
            Value::String(s) => s.clone(),
            Value::Integer(i) => i.to_string(),
            _ => return Err(cx.err(v.span(), &key, "a string or an integer")),
        };
        let value = level_value(factor, &text).map_err(|m| cx.err(v.span(), &key, m))?;
        out.push(Level { factor, value });
    }
    Ok(out)
}
