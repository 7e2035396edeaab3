//! The one step every measured result goes through after its runs and before it is printed
//! or saved: a single test, each sweep point, each study point (study cells run as sweeps)
//! and a test under load alike, so the same measurement gets the same figures and verdict
//! wherever it was taken.
//!
//! What it adds depends on the result's spec and on this machine's limits (`wirebench
//! limits`, cached for this boot; the caller reads them, nothing here does I/O):
//!
//! - a profiled result (`profile_hz` set): its sampling rate and expected cost
//!   ([`limits::profile_cost`]), expected cost not measured without limits;
//! - a stream result with limits: its physical context ([`limits::physical_context`]);
//! - a stream result: each run's verdict weighed against the limits, or listing them as
//!   missing ([`verdict::machine_limits`]).
//!
//! Other results (request/response, UDP, a result without a spec) are left as they are.

use wirebench_model::limits::LimitsResult;
use wirebench_model::result::RunResult;
use wirebench_model::spec::WorkloadKind;

use crate::{limits, verdict};

/// True when [`finish`] reads the limits for `result` (a stream or a profiled result): a
/// caller can skip loading them otherwise.
pub fn needs_limits(result: &RunResult) -> bool {
    result
        .spec
        .as_ref()
        .is_some_and(|s| s.kind() == WorkloadKind::Stream || s.common.profile_hz.is_some())
}

/// Adds to `result` what this machine's `limits` say about it (see the module docs).
pub fn finish(result: &mut RunResult, limits: Option<&LimitsResult>) {
    let Some(spec) = result.spec.as_ref() else {
        return;
    };
    let stream = spec.kind() == WorkloadKind::Stream;
    if let Some(hz) = spec.common.profile_hz {
        result.profile_cost = Some(limits::profile_cost(hz, limits));
    }
    if stream {
        if let Some(l) = limits {
            result.physical = limits::physical_context(result, l);
        }
        verdict::machine_limits(result, limits);
    }
}
