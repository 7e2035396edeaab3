//! Test specs for tests that talk to a daemon directly.

use wirebench_model::spec::{CommonSpec, StreamSpec, TestSpec, WorkloadSpec};

/// A forward stream test of `duration_ms` with [`StreamSpec`]'s fixed defaults.
pub fn short_spec(duration_ms: u64) -> TestSpec {
    TestSpec {
        common: CommonSpec {
            duration_ms,
            ..CommonSpec::default()
        },
        ..TestSpec::stream_default()
    }
}

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
