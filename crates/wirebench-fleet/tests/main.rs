//! The scheduler at scale, on paper (issue: a full mesh of 1,000 hosts at 10 s per test).

use wirebench_fleet::simulate::simulate;
use wirebench_fleet::topology::jobs;
use wirebench_fleet::{JobClass, Overlap, Topology};

/// A full mesh of 1,000 hosts, one 10 s stream per ordered pair (999,000 tests): with
/// exclusive hosts it takes 2(N−1) = 1,998 rounds, 5.55 hours, 500 tests at once; one test
/// at a time would take 9,990,000 s (115.6 days). The figures are docs/MESH.md's.
#[test]
fn a_full_mesh_of_1000_hosts_takes_2_n_minus_1_rounds() {
    let n = 1000;
    let js = jobs(n, &Topology::FullMesh, &[JobClass::Throughput], 1).unwrap();
    assert_eq!(js.len(), n * (n - 1));
    let sim = simulate(n, js, Overlap::Exclusive, |_| 10_000);
    assert_eq!(sim.rounds, 2 * (n - 1));
    assert_eq!(sim.wall_ms, 2 * (n as u64 - 1) * 10_000);
    assert_eq!(sim.max_parallel, n / 2);
    assert_eq!(sim.serial_ms, (n * (n - 1)) as u64 * 10_000);
    eprintln!("{sim:?}");
}

/// Uneven lengths (a test's length depends on its pair) and a latency test per pair beside
/// the throughput one: no host is ever in two throughput tests (the simulation checks every
/// start), the mesh finishes, and letting latency tests share hosts shortens it.
#[test]
fn uneven_tests_keep_hosts_exclusive_and_latency_may_share() {
    let n = 24;
    let plan = [JobClass::Throughput, JobClass::LatencyOnly];
    let dur = |j: &wirebench_fleet::Job| match j.class {
        JobClass::Throughput => 5_000 + 250 * ((j.clients[0] * 7 + j.server * 3) % 13) as u64,
        JobClass::LatencyOnly => 2_000,
    };
    let js = jobs(n, &Topology::FullMesh, &plan, 2).unwrap();
    let excl = simulate(n, js.clone(), Overlap::Exclusive, dur);
    let beside = simulate(n, js, Overlap::LatencyBesideThroughput, dur);
    assert!(excl.wall_ms < excl.serial_ms / 8, "{excl:?}");
    assert!(beside.wall_ms < excl.wall_ms, "{beside:?} vs {excl:?}");
    assert!(excl.max_parallel <= n / 2);
    // docs/MESH.md's table.
    assert_eq!(
        (excl.wall_ms, excl.max_parallel, excl.serial_ms),
        (803_500, 12, 9_379_500)
    );
    assert_eq!((beside.wall_ms, beside.max_parallel), (625_000, 24));
    eprintln!("exclusive {excl:?}\nlatency beside throughput {beside:?}");
}
