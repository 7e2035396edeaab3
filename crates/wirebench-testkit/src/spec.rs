//! Test specs for tests that talk to a daemon directly.

use wirebench_model::spec::{CommonSpec, StreamSpec, TestSpec, WorkloadSpec};

/// A forward stream test of `duration_ms` with [`StreamSpec`]'s fixed defaults.
///
/// Its one flow is paced to [`SHORT_SPEC_RATE_BPS`]: the tests that use it check what a
/// daemon does (admission, deadlines, records, refusals), not how fast, and an unpaced
/// stream keeps both CPUs busy for its whole duration, taking them from the tests beside it
/// (two 2 s background streams cost about 8 CPU-seconds).
pub fn short_spec(duration_ms: u64) -> TestSpec {
    let mut spec = TestSpec {
        common: CommonSpec {
            duration_ms,
            ..CommonSpec::default()
        },
        ..TestSpec::stream_default()
    };
    if let WorkloadSpec::Stream(st) = &mut spec.workload {
        st.rate_bps = Some(SHORT_SPEC_RATE_BPS);
    }
    spec
}

/// The pacing rate of [`short_spec`]'s flow, bit/s of payload.
pub const SHORT_SPEC_RATE_BPS: u64 = 200_000_000;

/// A stream test of `duration_ms` ([`short_spec`]) whose common and stream settings `f`
/// changes.
pub fn stream_spec(duration_ms: u64, f: impl FnOnce(&mut CommonSpec, &mut StreamSpec)) -> TestSpec {
    let mut spec = short_spec(duration_ms);
    let WorkloadSpec::Stream(st) = &mut spec.workload else {
        unreachable!("short_spec is a stream spec")
    };
    f(&mut spec.common, st);
    spec
}
