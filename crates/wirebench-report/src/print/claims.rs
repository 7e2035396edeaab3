//! The claims table of `wirebench study run --all`: every shipped study's expectations (the
//! seeds' claims), each with this machine's result — the compared value's median and its
//! spread over the rounds, per group — and its verdict.

use std::fmt::Write as _;

use wirebench_model::study::{ExpectationOutcome, Verdict};
use wirebench_model::text::escape;

use super::study::{levels_text, spread_text, verdict_text};

/// One study's row block: its name (the file's stem) and its evaluated expectations, or why
/// it has none (it did not run, or failed before any point).
pub struct StudyClaims {
    /// The study's name (file stem).
    pub study: String,
    /// Its expectations, evaluated on its points.
    pub outcomes: Vec<ExpectationOutcome>,
    /// Why there are no results, if so.
    pub error: Option<String>,
}

/// `, paired over N rounds` for a ratio judged on its per-round ratios; empty otherwise.
pub fn paired_text(rounds: Option<u32>) -> String {
    rounds.map_or(String::new(), |n| format!(", paired over {n} rounds"))
}

/// The result of one expectation in words: per group, the compared value's median with
/// its range (`1.234 (0.987–1.456)` for a ratio; the figure in its unit otherwise) and
/// the group's levels.
pub fn result_lines(o: &ExpectationOutcome) -> Vec<String> {
    let e = &o.expectation;
    o.cases
        .iter()
        .map(|c| {
            let value = if c.denominator.is_some() {
                if c.value_min < c.value_max {
                    format!(
                        "{:.3} ({:.3}–{:.3}{})",
                        c.value,
                        c.value_min,
                        c.value_max,
                        paired_text(c.paired_rounds)
                    )
                } else {
                    format!("{:.3}", c.value)
                }
            } else {
                spread_text(e.figure, &c.numerator_spread)
            };
            let mark = match c.verdict {
                Verdict::Holds => "ok",
                Verdict::DoesNotHold => "FAIL",
                _ => "inconclusive",
            };
            format!("{value} {mark}  {}", levels_text(&c.group))
        })
        .collect()
}

/// The claims table: per study, each claim with its verdict, the bound, and the result of
/// every group under it; a count of verdicts at the end.
pub fn claims_text(studies: &[StudyClaims]) -> String {
    let mut out = String::from(
        "claims: study, claim (the seed's, as an expectation), this machine's result \
         (median, (min–max) over the rounds, per group), verdict\n",
    );
    let mut counts = [0usize; 4];
    for s in studies {
        let _ = writeln!(out, "\n{}", escape(&s.study));
        if let Some(e) = &s.error {
            let _ = writeln!(out, "  no results: {}", escape(e));
        }
        for o in &s.outcomes {
            let e = &o.expectation;
            let i = match o.verdict {
                Verdict::Holds => 0,
                Verdict::DoesNotHold => 1,
                Verdict::Inconclusive => 2,
                Verdict::NoData => 3,
            };
            counts[i] += 1;
            let bound = format!("{} {} {}", e.figure.key(), e.op.symbol(), e.value);
            let _ = writeln!(
                out,
                "  {:<13} {}  [{}{}]",
                verdict_text(o.verdict),
                escape(&e.name),
                if e.denominator.is_some() {
                    "ratio of "
                } else {
                    ""
                },
                bound
            );
            for l in result_lines(o) {
                let _ = writeln!(out, "                  {l}");
            }
        }
    }
    let _ = writeln!(
        out,
        "\n{} claim(s): {} hold, {} do not hold, {} inconclusive, {} without data",
        counts.iter().sum::<usize>(),
        counts[0],
        counts[1],
        counts[2],
        counts[3]
    );
    out
}
