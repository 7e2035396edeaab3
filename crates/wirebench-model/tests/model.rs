//! Unit tests of the model: validation rules, JSON shapes, round trips.

use wirebench_model::abort::AbortReason;
use wirebench_model::side::{HostRole, Role};
use wirebench_model::spec::*;
use wirebench_model::validate::*;
use wirebench_model::warning::{Noted, Warning};

fn stream() -> (TestSpec, Limits) {
    (TestSpec::stream_default(), Limits::default())
}

fn field_of(s: &TestSpec, l: &Limits) -> SpecField {
    s.validate(l).expect_err("should be refused").field
}

fn stream_mut(s: &mut TestSpec) -> &mut StreamSpec {
    match &mut s.workload {
        WorkloadSpec::Stream(x) => x,
        _ => unreachable!("a stream spec"),
    }
}

#[test]
fn defaults_are_valid() {
    let l = Limits::default();
    for w in [
        WorkloadSpec::Stream(StreamSpec::default()),
        WorkloadSpec::Rr(RrSpec::default()),
        WorkloadSpec::Crr(CrrSpec::default()),
        WorkloadSpec::UdpRr(UdpRrSpec::default()),
        WorkloadSpec::UdpStream(UdpStreamSpec::default()),
    ] {
        TestSpec::new(w).validate(&l).unwrap();
    }
}

#[test]
fn out_of_range_names_field_and_limit() {
    let (mut s, l) = stream();
    s.common.flows = 0;
    let e = s.validate(&l).unwrap_err();
    assert_eq!(e.field, SpecField::Flows);
    assert_eq!(
        e.to_string(),
        "common.flows: 0 is out of range (allowed 1..=128; the server's `serve --max-flows`)"
    );
    s.common.flows = 1_000_000_000;
    assert!(matches!(
        s.validate(&l).unwrap_err().problem,
        SpecProblem::OutOfRange {
            limit: Some(LimitName::MaxFlows),
            max: 128,
            ..
        }
    ));
    let (mut s, _) = stream();
    s.common.warmup_ms = s.common.duration_ms + 1;
    assert_eq!(
        s.validate(&l).unwrap_err(),
        SpecError {
            field: SpecField::WarmupMs,
            problem: SpecProblem::WarmupLongerThanDuration
        }
    );
    let (mut s, _) = stream();
    s.common.interval_ms = Some(0);
    assert_eq!(field_of(&s, &l), SpecField::IntervalMs);
    let (mut s, _) = stream();
    stream_mut(&mut s).send_size_bytes = 0;
    assert_eq!(field_of(&s, &l), SpecField::SendSizeBytes);
    let (mut s, _) = stream();
    stream_mut(&mut s).tcp.congestion = Some("../../etc".into());
    assert_eq!(field_of(&s, &l), SpecField::Congestion);
    // 16 MiB messages on 128 flows each way would be 4 GiB of buffers.
    let (mut s, _) = stream();
    s.common.flows = 128;
    let st = stream_mut(&mut s);
    st.direction = Direction::Bidir;
    st.send_size_bytes = 16 << 20;
    assert!(matches!(
        s.validate(&l).unwrap_err(),
        SpecError {
            field: SpecField::SendSizeBytes,
            problem: SpecProblem::BuffersTooLarge { .. }
        }
    ));
}

/// The buffer bound counts what an end allocates: a buffer per connection on a thread per
/// flow, a buffer per epoll worker (plus the shared payload) on the many-flow engine.
#[test]
fn the_buffer_bound_counts_the_engines_buffers() {
    let (mut s, mut l) = stream();
    l.max_flows = 10_000;
    s.common.flows = 10_000;
    stream_mut(&mut s).send_size_bytes = 1 << 20;
    stream_mut(&mut s).recv_size_bytes = 1 << 20;
    // Unpaced copy paths above 32 connections: at most 256 workers, 257 buffers.
    assert_eq!(s.epoll_workers_bound(), Some(MAX_THREADS));
    assert_eq!(s.message_buffers(), 257);
    s.validate(&l).unwrap();
    // Eight workers asked for: nine buffers.
    stream_mut(&mut s).threads = Some(8);
    assert_eq!(s.message_buffers(), 9);
    s.validate(&l).unwrap();
    // A path the epoll engine lacks, or a rate, takes a thread and a buffer per flow.
    stream_mut(&mut s).threads = None;
    stream_mut(&mut s).send_path = SendPath::Sendfile;
    assert_eq!(s.epoll_workers_bound(), None);
    assert_eq!(s.message_buffers(), 10_000);
    assert_eq!(field_of(&s, &l), SpecField::SendSizeBytes);
    stream_mut(&mut s).send_path = SendPath::Copy;
    stream_mut(&mut s).rate_bps = Some(1_000_000);
    assert_eq!(field_of(&s, &l), SpecField::SendSizeBytes);
    // 32 connections or fewer: a thread per flow.
    stream_mut(&mut s).rate_bps = None;
    s.common.flows = 16;
    stream_mut(&mut s).direction = Direction::Bidir;
    assert_eq!(s.epoll_workers_bound(), None);
    assert_eq!(s.message_buffers(), 32);
    s.common.flows = 17;
    assert_eq!(s.epoll_workers_bound(), Some(34));
    assert_eq!(s.message_buffers(), 35);
}

#[test]
fn verify_needs_a_path_that_delivers_data() {
    let (mut s, l) = stream();
    let st = stream_mut(&mut s);
    st.send_path = SendPath::Zerocopy;
    st.recv_path = RecvPath::Uring;
    st.verify = true;
    s.validate(&l).unwrap();
    for p in [RecvPath::Discard, RecvPath::Splice] {
        stream_mut(&mut s).recv_path = p;
        assert_eq!(field_of(&s, &l), SpecField::Verify);
    }
}

#[test]
fn rr_rules() {
    let l = Limits::default();
    let mut r = RrSpec {
        pacing: RrLoop::Closed { burst: 0 },
        ..RrSpec::default()
    };
    assert_eq!(
        field_of(&TestSpec::new(WorkloadSpec::Rr(r.clone())), &l),
        SpecField::Burst
    );
    r.pacing = RrLoop::Closed {
        burst: MAX_BURST + 1,
    };
    assert_eq!(
        field_of(&TestSpec::new(WorkloadSpec::Rr(r.clone())), &l),
        SpecField::Burst
    );
    r.pacing = RrLoop::Open {
        transactions_per_s: 0,
        max_outstanding: 10,
    };
    assert_eq!(
        field_of(&TestSpec::new(WorkloadSpec::Rr(r.clone())), &l),
        SpecField::TransactionsPerS
    );
    r.pacing = RrLoop::Open {
        transactions_per_s: 10,
        max_outstanding: 0,
    };
    assert_eq!(
        field_of(&TestSpec::new(WorkloadSpec::Rr(r)), &l),
        SpecField::MaxOutstanding
    );
    let u = UdpRrSpec {
        request_size_bytes: 4,
        ..UdpRrSpec::default()
    };
    assert_eq!(
        field_of(&TestSpec::new(WorkloadSpec::UdpRr(u)), &l),
        SpecField::RequestSizeBytes
    );
    let u = UdpStreamSpec {
        datagram_bytes: 10,
        ..UdpStreamSpec::default()
    };
    assert_eq!(
        field_of(&TestSpec::new(WorkloadSpec::UdpStream(u)), &l),
        SpecField::DatagramBytes
    );
}

#[test]
fn rate_policy() {
    let l = Limits {
        max_rate_bps: Some(1_000_000_000),
        ..Limits::default()
    };
    let (mut s, _) = stream();
    assert!(matches!(
        s.validate(&l).unwrap_err().problem,
        SpecProblem::RateRequired { .. }
    ));
    stream_mut(&mut s).rate_bps = Some(400_000_000);
    s.common.flows = 2;
    s.validate(&l).unwrap();
    s.common.flows = 3;
    assert!(matches!(
        s.validate(&l).unwrap_err(),
        SpecError {
            field: SpecField::RateBps,
            problem: SpecProblem::OutOfRange {
                value: 1_200_000_000,
                limit: Some(LimitName::MaxRate),
                ..
            }
        }
    ));
    // Open-loop RR: rate x (request + response) bits x flows.
    let r = RrSpec {
        request_size_bytes: 100,
        response_size_bytes: 150,
        pacing: RrLoop::Open {
            transactions_per_s: 100_000,
            max_outstanding: 10,
        },
        ..RrSpec::default()
    };
    let t = TestSpec::new(WorkloadSpec::Rr(r));
    assert_eq!(t.aggregate_rate_bps(), Some(100_000 * 250 * 8));
    t.validate(&l).unwrap();
    // Closed loops and CRR have no rate the server could check in advance.
    for w in [
        WorkloadSpec::Rr(RrSpec::default()),
        WorkloadSpec::Crr(CrrSpec::default()),
        WorkloadSpec::UdpRr(UdpRrSpec::default()),
    ] {
        assert!(matches!(
            TestSpec::new(w).validate(&l).unwrap_err().problem,
            SpecProblem::RateRequired { .. }
        ));
    }
}

#[test]
fn connections_and_directions() {
    let (mut s, _) = stream();
    s.common.flows = 2;
    stream_mut(&mut s).direction = Direction::Bidir;
    assert_eq!(
        s.flow_dirs(),
        vec![
            FlowDir::ClientToServer,
            FlowDir::ClientToServer,
            FlowDir::ServerToClient,
            FlowDir::ServerToClient
        ]
    );
    assert_eq!(s.connection_count(), 4);
    assert_eq!(s.setup_connections(), 4);
    let c = TestSpec::new(WorkloadSpec::Crr(CrrSpec::default()));
    assert_eq!(c.setup_connections(), 0);
    assert_eq!(c.direction(), Direction::Forward);
    assert!(HostRole::Client.sends(FlowDir::ClientToServer));
    assert_eq!(
        HostRole::Client.role(FlowDir::ServerToClient),
        Role::Receiver
    );
}

#[test]
fn spec_json_shape_and_strictness() {
    let s = TestSpec::new(WorkloadSpec::UdpRr(UdpRrSpec::default()));
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["workload"]["udp_rr"]["timeout_ms"], 100);
    let back: TestSpec = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(back, s);
    // A field that does not apply to the workload is an error, not ignored.
    let mut bad = v;
    bad["workload"]["udp_rr"]["send_path"] = "copy".into();
    assert!(serde_json::from_value::<TestSpec>(bad).is_err());
    let r = TestSpec::new(WorkloadSpec::Rr(RrSpec::default()));
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["workload"]["rr"]["pacing"]["loop"], "closed");
    assert_eq!(v["workload"]["rr"]["pacing"]["burst"], 1);
}

#[test]
fn field_names_match_serde() {
    // The field table is one list; its names are what serde writes.
    for f in [
        SpecField::Flows,
        SpecField::Congestion,
        SpecField::TimeoutMs,
    ] {
        assert_eq!(
            serde_json::to_value(f).unwrap(),
            serde_json::Value::String(f.as_str().into())
        );
    }
    for k in [
        WorkloadKind::Stream,
        WorkloadKind::UdpRr,
        WorkloadKind::UdpStream,
    ] {
        assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
    }
    for p in SendPath::ALL {
        assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
    }
    for p in RecvPath::ALL {
        assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
    }
    let e = wirebench_model::error::ErrorKind::InvalidSpec;
    assert_eq!(serde_json::to_value(e).unwrap(), e.as_str());
}

#[test]
fn warnings_are_code_and_params() {
    let w = Noted::at(
        HostRole::Server,
        Warning::CpuBound {
            host: HostRole::Server,
            cpu: 1,
            busy_pct: 99.5,
            threads_pct: 97.0,
        },
    );
    let v = serde_json::to_value(&w).unwrap();
    assert_eq!(v["host"], "server");
    assert_eq!(v["code"], "cpu_bound");
    assert_eq!(v["params"]["cpu"], 1);
    let back: Noted = serde_json::from_value(v).unwrap();
    assert_eq!(back, w);
    let w = Noted::run(Warning::RunAborted {
        run: 2,
        reason: AbortReason::Interrupted,
    });
    let v = serde_json::to_value(&w).unwrap();
    assert!(v.get("host").is_none());
    assert_eq!(v["params"]["reason"]["reason"], "interrupted");
    assert_eq!(serde_json::from_value::<Noted>(v).unwrap(), w);
}

#[test]
fn iso8601_dates() {
    use wirebench_model::result::iso8601_utc;
    assert_eq!(iso8601_utc(0), "1970-01-01T00:00:00.000Z");
    // 2000-02-29 (a leap day of a century leap year).
    assert_eq!(iso8601_utc(951_782_400_000), "2000-02-29T00:00:00.000Z");
    // `date -u -d @1795520290.123`: 2026-11-24T11:38:10.123Z.
    assert_eq!(iso8601_utc(1_795_520_290_123), "2026-11-24T11:38:10.123Z");
    assert_eq!(iso8601_utc(4_102_444_799_999), "2099-12-31T23:59:59.999Z");
}

#[test]
fn summed_peer_counts_saturate_instead_of_wrapping() {
    use wirebench_model::side::{RecvWaitStats, ZeroCopyStats};
    let huge = RecvWaitStats {
        naps: u64::MAX,
        epoll_workers: u32::MAX,
        ..RecvWaitStats::default()
    };
    let mut sum = huge.clone();
    sum.add(&huge);
    assert_eq!((sum.naps, sum.epoll_workers), (u64::MAX, u32::MAX));
    let z = ZeroCopyStats {
        bytes_copied: u64::MAX,
        ..ZeroCopyStats::default()
    };
    let mut zs = z.clone();
    zs.add(&z);
    assert_eq!(zs.bytes_copied, u64::MAX);
}

/// The names an enum's JSON Schema allows: every variant, as serde writes it (the strings
/// under `enum` and `const`, wherever they are in the schema).
fn schema_names(schema: schemars::Schema) -> std::collections::BTreeSet<String> {
    fn walk(v: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    match (k.as_str(), x) {
                        ("const", serde_json::Value::String(s)) => {
                            out.insert(s.clone());
                        }
                        ("enum", serde_json::Value::Array(a)) => {
                            out.extend(a.iter().filter_map(|e| e.as_str().map(String::from)));
                        }
                        _ => walk(x, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = std::collections::BTreeSet::new();
    walk(schema.as_value(), &mut out);
    out
}

/// The names serde writes for `items`.
fn serde_names<T: serde::Serialize>(items: &[T]) -> std::collections::BTreeSet<String> {
    items
        .iter()
        .map(|x| match serde_json::to_value(x).unwrap() {
            serde_json::Value::String(s) => s,
            other => panic!("not a unit variant: {other}"),
        })
        .collect()
}

#[test]
fn the_lists_of_factors_limits_and_fields_are_complete() {
    // Every variant is in the derived schema; `ALL` must name each once.
    use wirebench_model::sweep::FactorName;
    let factors = schema_names(schemars::schema_for!(FactorName));
    assert_eq!(factors.len(), FactorName::ALL.len());
    assert_eq!(serde_names(&FactorName::ALL), factors);
    let limits = schema_names(schemars::schema_for!(LimitName));
    assert_eq!(limits.len(), LimitName::ALL.len());
    assert_eq!(serde_names(&LimitName::ALL), limits);
    let fields = schema_names(schemars::schema_for!(SpecField));
    assert_eq!(fields.len(), SpecField::ALL.len());
    assert_eq!(serde_names(SpecField::ALL), fields);
    assert!(fields.contains("workload.recv_wait"), "{fields:?}");
}
