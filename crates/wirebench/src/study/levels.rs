//! Values of a study's levels: the factor a key names and a value's parsing and checking,
//! shared by the file's sections (testbed, cells, conditions, selectors).

use toml::Value;
use wirebench_lab::named::{parse_duration_ns, parse_offloads, parse_pct, parse_rate_bps};
use wirebench_model::study::{Placement, StudyFactor, TestbedFactor};
use wirebench_model::sweep::{FactorName, FactorValue};

use super::file::{MAX_MTU, MIN_MTU};

/// The testbed factor a key names.
pub(super) fn testbed_factor(key: &str) -> Option<TestbedFactor> {
    TestbedFactor::ALL.into_iter().find(|f| f.key() == key)
}

/// The factor a key names in a selector or a condition: a testbed factor first, then a
/// test factor; `test.KEY` names only the test factor and `testbed.KEY` only the testbed
/// one, for the keys both have (`rate`: the testbed's tbf rate, or the test's `-b`).
pub(super) fn study_factor(key: &str) -> Option<StudyFactor> {
    if let Some(k) = key.strip_prefix("test.") {
        return test_factor(k).map(StudyFactor::Test);
    }
    if let Some(k) = key.strip_prefix("testbed.") {
        return testbed_factor(k).map(StudyFactor::Testbed);
    }
    testbed_factor(key)
        .map(StudyFactor::Testbed)
        .or_else(|| test_factor(key).map(StudyFactor::Test))
}

/// The test factor a key names (`send_path` or `send-path`).
pub(super) fn test_factor(key: &str) -> Option<FactorName> {
    let k = key.replace('-', "_");
    FactorName::ALL
        .into_iter()
        .find(|f| f.flag().trim_start_matches("--").replace('-', "_") == k)
}

/// A testbed level from a TOML value, checked.
pub(super) fn testbed_value(f: TestbedFactor, v: &Value) -> Result<FactorValue, String> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Integer(i) => i.to_string(),
        Value::Float(x) => x.to_string(),
        other => {
            return Err(format!(
                "{} is not a value of {}",
                other.type_str(),
                f.key()
            ))
        }
    };
    let named = |e: wirebench_lab::named::NamedError| e.to_string();
    Ok(match f {
        TestbedFactor::Mtu => {
            let n: u64 = text
                .parse()
                .map_err(|_| format!("MTU {text:?} is not a number"))?;
            if !(MIN_MTU..=MAX_MTU).contains(&n) {
                return Err(format!(
                    "MTU {n} is impossible: a veth takes {MIN_MTU} to {MAX_MTU} bytes"
                ));
            }
            FactorValue::Number(n)
        }
        TestbedFactor::Rate => FactorValue::Number(parse_rate_bps(&text).map_err(named)?),
        TestbedFactor::Delay | TestbedFactor::Jitter => {
            FactorValue::Number(parse_duration_ns(f.key(), &text).map_err(named)?)
        }
        TestbedFactor::Loss | TestbedFactor::Reorder | TestbedFactor::Duplicate => {
            FactorValue::Name(parse_pct(f.key(), &text).map_err(named)?.to_string())
        }
        TestbedFactor::Offload => {
            parse_offloads(&text).map_err(named)?;
            FactorValue::Name(text)
        }
        TestbedFactor::Sysctl => {
            let s = wirebench_lab::named::parse_sysctl(&text).map_err(named)?;
            let mut spec = wirebench_lab::named::LabSpec::new("check");
            spec.sysctls.push(s);
            spec.validate().map_err(named)?;
            FactorValue::Name(text)
        }
        TestbedFactor::Cc => {
            let mut spec = wirebench_lab::named::LabSpec::new("check");
            spec.cc = Some(text.clone());
            spec.validate().map_err(named)?;
            FactorValue::Name(text)
        }
        TestbedFactor::Placement => {
            let p = Placement::ALL.into_iter().find(|p| p.key() == text);
            if p.is_none() {
                let names: Vec<&str> = Placement::ALL.iter().map(|p| p.key()).collect();
                return Err(format!("placement {text:?}: one of {}", names.join(", ")));
            }
            FactorValue::Name(text)
        }
    })
}

/// A level's value from text, as the factor stores it.
pub(super) fn level_value(factor: StudyFactor, text: &str) -> Result<FactorValue, String> {
    match factor {
        StudyFactor::Testbed(TestbedFactor::Mtu) => text
            .parse()
            .map(FactorValue::Number)
            .map_err(|_| format!("{text:?} is not a number")),
        StudyFactor::Testbed(f) => testbed_value(f, &Value::String(text.to_string())),
        StudyFactor::Test(f) if f.is_named() => Ok(FactorValue::Name(text.to_string())),
        StudyFactor::Test(f) => match f {
            FactorName::Rate => crate::args::parse_rate(text).map(FactorValue::Number),
            FactorName::Flows | FactorName::Burst | FactorName::UnderLoad => text
                .parse()
                .map(FactorValue::Number)
                .map_err(|_| format!("{text:?} is not a whole number")),
            _ => crate::args::parse_size(text).map(FactorValue::Number),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rate` is both the testbed's tbf rate and the test's `-b`: bare, it names the
    /// testbed's; `test.rate` names the test's, `testbed.rate` the testbed's explicitly.
    #[test]
    fn a_prefix_picks_the_test_or_the_testbed_factor() {
        assert_eq!(
            study_factor("rate"),
            Some(StudyFactor::Testbed(TestbedFactor::Rate))
        );
        assert_eq!(
            study_factor("test.rate"),
            Some(StudyFactor::Test(FactorName::Rate))
        );
        assert_eq!(
            study_factor("testbed.rate"),
            Some(StudyFactor::Testbed(TestbedFactor::Rate))
        );
        // A key only one side has resolves bare, and not under the other prefix.
        assert_eq!(
            study_factor("send_path"),
            Some(StudyFactor::Test(FactorName::SendPath))
        );
        assert_eq!(study_factor("testbed.send_path"), None);
        assert_eq!(study_factor("test.mtu"), None);
        assert_eq!(
            study_factor("testbed.mtu"),
            Some(StudyFactor::Testbed(TestbedFactor::Mtu))
        );
    }
}
