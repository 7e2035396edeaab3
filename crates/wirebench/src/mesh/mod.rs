//! Tests between many hosts (`wirebench mesh`): the plan ([`plan`]: `--hosts` or a plan
//! file, its tests parsed as the test commands parse them) and the executor ([`exec`]: the
//! fleet's scheduler, a thread per started test). Which pairs and when is
//! `wirebench-fleet`'s; running one test is the runner's.

pub mod daemons;
pub mod exec;
pub mod plan;
