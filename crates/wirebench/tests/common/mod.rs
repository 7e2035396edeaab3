//! The test kit (`wirebench-testkit`) for this binary's tests, plus what only this crate's
//! integration tests know: the path of the binary under test.

#![allow(dead_code, unused_imports)]

pub use wirebench_testkit::*;

/// Path of the binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_wirebench");

/// Measurement tests take this lock so that no other test competes for the two CPUs
/// ([`wirebench_testkit::serial`], after naming the binary under test).
pub fn serial() -> Held<RunGuard> {
    use_binary(BIN);
    wirebench_testkit::serial()
}

/// Tests that measure nothing take this ([`wirebench_testkit::shared`], after naming the
/// binary under test).
pub fn shared() -> Held<RunGuard> {
    use_binary(BIN);
    wirebench_testkit::shared()
}

/// Tests that measure nothing but assert a wall-clock bound take this
/// ([`wirebench_testkit::shared_timed`], after naming the binary under test).
pub fn shared_timed() -> Held<RunGuard> {
    use_binary(BIN);
    wirebench_testkit::shared_timed()
}

/// Measurements whose figures a shaped or emulated link sets, using a small share of a CPU,
/// take this ([`wirebench_testkit::link_bound`], after naming the binary under test).
pub fn link_bound() -> Held<RunGuard> {
    use_binary(BIN);
    wirebench_testkit::link_bound()
}
