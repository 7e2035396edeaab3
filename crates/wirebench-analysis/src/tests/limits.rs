//! `wirebench limits`: the batches' figures, the loopback ceiling, a stream result's physical
//! context, and implausible figures.

use wirebench_model::limits::MemorySamples;
use wirebench_model::result::WorkloadSummary;
use wirebench_model::side::ZeroCopyStats;
use wirebench_model::spec::{Direction, RecvPath, SendPath, TestSpec, WorkloadSpec};

use super::*;
use crate::limits::{loopback_ceiling, memory_row, ns_per, per_second, physical_context};

#[test]
fn batches_become_rates_and_times() {
    // 2 GB in 100 ms = 20 GB/s; 3 GB in 100 ms = 30 GB/s; 1 GB in 100 ms = 10 GB/s.
    let s = per_second(&[
        b(2_000_000_000, 100),
        b(3_000_000_000, 100),
        b(1_000_000_000, 100),
    ])
    .unwrap();
    assert!(close(s.median, 20e9) && close(s.min, 10e9) && close(s.max, 30e9));
    assert_eq!(s.n, 3);
    // 100 000 calls in 10 ms: 100 ns each; 1000 round trips in 10 ms: 5 µs one way.
    assert!(close(ns_per(&[b(100_000, 10)], 1).unwrap().median, 100.0));
    assert!(close(ns_per(&[b(1000, 10)], 2).unwrap().median, 5000.0));
    // Empty batches are left out; none at all is no figure.
    assert_eq!(per_second(&[b(0, 10), b(5, 0)]), None);
    assert_eq!(per_second(&[]), None);
}

#[test]
fn a_size_measured_on_one_thread_has_no_all_threads_figure() {
    let m = MemorySamples {
        buffer_bytes: 1 << 20,
        copy_one: vec![b(1 << 30, 50)],
        copy_all: vec![],
        checksum: vec![b(1 << 30, 25)],
        copy_unlucky: vec![b(1 << 26, 50)],
    };
    let r = memory_row(&m);
    assert_eq!(r.buffer_bytes, 1 << 20);
    // 2^30 bytes in 50 ms.
    assert!(close(
        r.copy_one_thread_bytes_per_s.unwrap().median,
        1073741824.0 / 0.05
    ));
    assert!(close(
        r.checksum_bytes_per_s.unwrap().median,
        1073741824.0 / 0.025
    ));
    // 2^26 bytes in 50 ms: the unlucky placement's own rate, 16x below the placed copy.
    assert!(close(
        r.copy_unlucky_bytes_per_s.unwrap().median,
        67108864.0 / 0.05
    ));
    assert_eq!(r.copy_all_threads_bytes_per_s, None);
}

#[test]
fn the_loopback_ceiling_is_the_receivers_rate_and_congestion_control() {
    let mut r = stream_result(one_flow(), 25e9);
    r.runs[0].summary.as_mut().unwrap().congestion = vec!["cubic".into()];
    let c = loopback_ceiling(&r).unwrap();
    assert!(close(c.throughput_bps, 25e9));
    assert_eq!(c.congestion.as_deref(), Some("cubic"));
    assert_eq!(
        (c.flows, c.msg_bytes, c.duration_ms),
        (1, 128 * 1024, 10_000)
    );
    r.status = wirebench_model::result::RunStatus::Aborted;
    assert!(loopback_ceiling(&r).is_err());
}

#[test]
fn a_loopback_copy_stream_makes_two_copies_at_the_nearest_size() {
    // 16 Gbit/s = 2 GB/s of payload, copied twice on this machine = 4 GB/s, against 40 GB/s
    // at 128 KiB (the message size) on one thread: 10 %.
    let r = stream_result(one_flow(), 16e9);
    let p = physical_context(&r, &limits()).unwrap();
    assert_eq!(
        (p.msg_bytes, p.buffer_bytes, p.copy_threads),
        (128 << 10, 128 << 10, 1)
    );
    assert!(close(p.payload_bytes_per_s, 2e9));
    assert!(close(p.copies_per_byte, 2.0));
    assert!(close(p.copied_bytes_per_s, 4e9));
    assert!(close(p.copy_bandwidth_pct, 10.0));
    assert_eq!(p.boot_id, "b00t");
    assert_eq!(p.limits_started_utc, "2023-11-14T22:13:20.000Z");
}

#[test]
fn only_copying_ends_on_this_machine_count() {
    let copies = |send: SendPath, recv: RecvPath, embedded: bool, zc: Option<ZeroCopyStats>| {
        let mut r = stream_result(one_flow(), 16e9);
        r.embedded_server = embedded;
        let s = r.runs[0].summary.as_mut().unwrap();
        s.same_host = embedded;
        let WorkloadSummary::Stream(st) = &mut s.workload else {
            unreachable!()
        };
        st.directions[0].send_paths = vec![send];
        st.directions[0].recv_paths = vec![recv];
        st.directions[0].zerocopy = zc;
        physical_context(&r, &limits()).unwrap().copies_per_byte
    };
    assert_eq!(copies(SendPath::Copy, RecvPath::Copy, true, None), 2.0);
    assert_eq!(copies(SendPath::Sendfile, RecvPath::Copy, true, None), 1.0);
    assert_eq!(copies(SendPath::Copy, RecvPath::Discard, true, None), 1.0);
    assert_eq!(
        copies(SendPath::Sendfile, RecvPath::Discard, true, None),
        0.0
    );
    assert_eq!(copies(SendPath::Uring, RecvPath::Uring, true, None), 2.0);
    // A remote server: only the client's (sending) end is here.
    assert_eq!(copies(SendPath::Copy, RecvPath::Copy, false, None), 1.0);
    assert_eq!(copies(SendPath::Sendfile, RecvPath::Copy, false, None), 0.0);
    // MSG_ZEROCOPY over loopback: the kernel copied every send after all.
    let copied = ZeroCopyStats {
        sends: 10,
        sends_completed_copied: 10,
        ..ZeroCopyStats::default()
    };
    assert_eq!(
        copies(SendPath::Zerocopy, RecvPath::Copy, true, Some(copied)),
        2.0
    );
    let mapped = ZeroCopyStats {
        sends: 10,
        sends_completed_zerocopy: 10,
        bytes_mapped: 1000,
        bytes_copied: 10,
        ..ZeroCopyStats::default()
    };
    assert_eq!(
        copies(SendPath::Zerocopy, RecvPath::Zerocopy, true, Some(mapped)),
        0.0
    );
}

#[test]
fn several_flows_use_the_all_threads_figure_where_there_is_one() {
    // Two flows (forward_two's spec) at 128 KiB: 60 GB/s on 2 threads.
    let p = physical_context(
        &stream_result(stream_spec(Direction::Forward, 2), 16e9),
        &limits(),
    )
    .unwrap();
    assert_eq!(p.copy_threads, 2);
    assert!(close(p.copy_bytes_per_s, 60e9));
    // 256 MiB messages: the nearest size has no all-threads figure, so one thread's.
    let mut spec = stream_spec(Direction::Forward, 2);
    stream_spec_mut(&mut spec).send_size_bytes = 200 << 20;
    let p = physical_context(&stream_result(spec, 16e9), &limits()).unwrap();
    assert_eq!((p.buffer_bytes, p.copy_threads), (256 << 20, 1));
    assert!(close(p.copy_bytes_per_s, 8e9));
}

#[test]
fn the_nearest_size_is_nearest_on_a_log_scale() {
    let l = limits();
    let near = |n: u64| l.nearest_row(n).unwrap().buffer_bytes;
    assert_eq!(near(1), 128 << 10);
    assert_eq!(near(300 << 10), 128 << 10);
    // 362 KiB is about the geometric mean of 128 KiB and 1 MiB; 400 KiB is nearer 1 MiB.
    assert_eq!(near(400 << 10), 1 << 20);
    assert_eq!(near(8 << 20), 1 << 20);
    assert_eq!(near(32 << 20), 256 << 20);
}

#[test]
fn no_context_without_a_stream_a_boot_or_a_completed_run() {
    let mut l = limits();
    let r = stream_result(one_flow(), 16e9);
    let rr = result_for(TestSpec::new(WorkloadSpec::Rr(Default::default())), vec![]);
    assert_eq!(physical_context(&rr, &l), None);
    let mut failed = r.clone();
    failed.runs[0].status = wirebench_model::result::RunStatus::Failed;
    assert_eq!(physical_context(&failed, &l), None);
    l.boot_id = None;
    assert_eq!(physical_context(&r, &l), None);
}

// ───── the schema ─────
