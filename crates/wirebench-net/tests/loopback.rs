//! In-process client ↔ daemon tests over loopback: the sessions, the token routing and the
//! engines together, without the CLI.

use std::sync::atomic::AtomicBool;

use wirebench_model::side::Role;
use wirebench_model::spec::{Direction, TestSpec, WorkloadSpec};
use wirebench_net::client::{self, ClientConfig, Outcome};
use wirebench_net::daemon::{Daemon, DaemonHandle, RecordStatus, ServerConfig};

fn daemon() -> DaemonHandle {
    Daemon::bind(ServerConfig::new("127.0.0.1:0".parse().unwrap()))
        .unwrap()
        .spawn()
        .unwrap()
}

#[test]
fn forward_and_reverse_complete_and_reconcile() {
    let d = daemon();
    for dir in [Direction::Forward, Direction::Reverse] {
        let mut spec = TestSpec::stream_default();
        spec.common.duration_ms = 500;
        if let WorkloadSpec::Stream(s) = &mut spec.workload {
            s.direction = dir;
        }
        let cfg = ClientConfig::new(d.addr(), spec);
        let run = client::run(&cfg, &AtomicBool::new(false), &mut |_| {}).unwrap();
        assert_eq!(run.outcome, Outcome::Completed);
        let c = run.client.unwrap();
        let s = run.server.unwrap();
        let (c, s) = (&c.stream().unwrap().flows, &s.stream().unwrap().flows);
        let (snd, rcv) = if c[0].role == Role::Sender {
            (&c[0], &s[0])
        } else {
            (&s[0], &c[0])
        };
        assert!(rcv.total_bytes > 0);
        assert_eq!(snd.total_bytes, rcv.total_bytes);
    }
    // The daemon recorded both tests and freed their slots (it finishes its bookkeeping
    // after the client has left): poll for it.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while (d.records().len() < 2 || d.stats().running_tests > 0)
        && std::time::Instant::now() < until
    {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let st = d.stats();
    assert_eq!(st.running_tests, 0);
    assert_eq!(d.records().len(), 2);
    assert!(d
        .records()
        .iter()
        .all(|r| r.status == RecordStatus::Completed));
}

/// Both ends send a message far larger than the socket buffers at the same moment (as both
/// ends send their `results` at the end of a many-flow test): neither blocks the other, and
/// each receives the other's message intact.
#[test]
fn simultaneous_large_control_messages_do_not_deadlock() {
    use std::net::TcpStream;
    use std::time::{Duration, Instant};
    use wirebench_model::abort::AbortReason;
    use wirebench_net::conn::Control;
    use wirebench_proto::message::{AbortMsg, Message};

    let (a, b) = wirebench_testkit::net::loopback_pair();
    let big = |c: char| {
        Message::Abort(AbortMsg {
            reason: AbortReason::EngineFailed {
                detail: std::iter::repeat_n(c, 24 << 20).collect(),
            },
        })
    };
    let t = Instant::now();
    let run = |s: TcpStream, mine: char, theirs: char| {
        move || {
            let mut c = Control::new(s, 64 << 20);
            c.send(&big(mine)).unwrap();
            let got = c
                .recv(Instant::now() + Duration::from_secs(20))
                .unwrap()
                .expect("the peer's message");
            assert_eq!(got, big(theirs));
        }
    };
    let ha = std::thread::spawn(run(a, 'a', 'b'));
    let hb = std::thread::spawn(run(b, 'b', 'a'));
    ha.join().unwrap();
    hb.join().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}
