//! Tests of the session state machines (`wirebench_proto::session`).
use std::sync::Arc;

use std::time::{Duration, Instant};
use wirebench_proto::auth::AuthError;
use wirebench_proto::frame::{ABSOLUTE_MAX_FRAME_BYTES, DEFAULT_MAX_FRAME_BYTES};
use wirebench_proto::message::Empty;
use wirebench_proto::session::*;

use crate::testutil::{all_messages, full_side_report};
use wirebench_model::abort::AbortReason;
use wirebench_model::side::{HostRole, IntervalData};
use wirebench_model::spec::{Limits, TestSpec};
use wirebench_proto::auth::{self, Key, KeyTable, Nonce};
use wirebench_proto::data::Token;
use wirebench_proto::message::{
    AbortMsg, Accepted, Busy, BusyScope, ErrorCode, ErrorMsg, Hello, IntervalMsg, Message,
    TestRequest, Welcome, HELLO_MAGIC, PROTOCOL_VERSION,
};

/// An empty message body.
const EMPTY: Empty = Empty {};

const S: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);

fn token() -> Token {
    Token([0x5a; 16])
}

fn hello() -> Message {
    Message::Hello(Hello {
        magic: HELLO_MAGIC.into(),
        version: PROTOCOL_VERSION,
        software: "test".into(),
    })
}

fn empty(kind: &str) -> Message {
    match kind {
        "ready" => Message::Ready(EMPTY),
        "start" => Message::Start(EMPTY),
        "heartbeat" => Message::Heartbeat(EMPTY),
        "bye" => Message::Bye(EMPTY),
        _ => unreachable!(),
    }
}

fn interval(host: HostRole) -> IntervalMsg {
    IntervalMsg {
        host,
        sample: IntervalData::Stream(
            full_side_report(host)
                .stream()
                .map(|s| s.intervals[0].clone())
                .expect("a stream report"),
        ),
    }
}

fn sent(actions: &[Action]) -> Vec<&'static str> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Send(m) => Some(message_kind(m)),
            _ => None,
        })
        .collect()
}

fn server() -> (ServerSession, Instant) {
    let t0 = Instant::now();
    let s = ServerSession::new(t0, Timeouts::default(), Limits::default(), "srv".into());
    (s, t0)
}

/// A server driven to `phase` at t0 + 100 ms.
fn server_at(phase: Phase) -> (ServerSession, Instant) {
    let (mut s, t0) = server();
    let t = t0 + 100 * MS;
    let steps: &[Phase] = &[
        Phase::AwaitTest,
        Phase::AwaitAccept,
        Phase::AwaitData,
        Phase::AwaitStart,
        Phase::Running,
        Phase::AwaitResults,
        Phase::Done,
    ];
    for &p in steps {
        if s.phase() == phase {
            break;
        }
        match p {
            Phase::AwaitTest => s.handle(t, hello()).unwrap(),
            Phase::AwaitAccept => s
                .handle(
                    t,
                    Message::Test(Box::new(TestRequest::unauthenticated(
                        TestSpec::stream_default(),
                    ))),
                )
                .unwrap(),
            Phase::AwaitData => s.admitted(t, 7, token()),
            Phase::AwaitStart => s.data_ready(t),
            Phase::Running => s.handle(t, empty("start")).unwrap(),
            Phase::AwaitResults => s.engine_done(t, full_side_report(HostRole::Server)),
            Phase::Done => s.handle(t, empty("bye")).unwrap(),
            _ => unreachable!(),
        };
        assert_eq!(s.phase(), p);
    }
    assert_eq!(s.phase(), phase);
    (s, t)
}

fn client() -> (ClientSession, Instant, Vec<Action>) {
    let t0 = Instant::now();
    let (c, a) = ClientSession::new(
        t0,
        Timeouts::default(),
        TestSpec::stream_default(),
        "cli".into(),
    );
    (c, t0, a)
}

fn welcome() -> Message {
    Message::Welcome(Welcome {
        version: PROTOCOL_VERSION,
        software: "srv".into(),
        limits: Limits::default(),
        nonce: "ab".repeat(32),
        server_identity: "srv".into(),
        auth_required: false,
    })
}

fn accepted() -> Message {
    Message::Accepted(Accepted {
        test_id: 7,
        token: token().to_hex(),
    })
}

/// A client driven to `phase` at t0 + 100 ms.
fn client_at(phase: Phase) -> (ClientSession, Instant) {
    let (mut c, t0, _) = client();
    let t = t0 + 100 * MS;
    let steps: &[Phase] = &[
        Phase::AwaitAccept,
        Phase::AwaitData,
        Phase::AwaitReady,
        Phase::Running,
        Phase::AwaitResults,
        Phase::Done,
    ];
    for &p in steps {
        if c.phase() == phase {
            break;
        }
        match p {
            Phase::AwaitAccept => c.handle(t, welcome()).unwrap(),
            Phase::AwaitData => c.handle(t, accepted()).unwrap(),
            Phase::AwaitReady => c.data_opened(t),
            Phase::Running => c.handle(t, empty("ready")).unwrap(),
            Phase::AwaitResults => c.engine_done(t, full_side_report(HostRole::Client)),
            Phase::Done => c
                .handle(
                    t,
                    Message::Results(Box::new(full_side_report(HostRole::Server))),
                )
                .unwrap(),
            _ => unreachable!(),
        };
        assert_eq!(c.phase(), p);
    }
    assert_eq!(c.phase(), phase);
    (c, t)
}

#[test]
fn default_timeouts() {
    let t = Timeouts::default();
    assert_eq!(t.handshake, 5 * S);
    assert_eq!(t.data_connect, 10 * S);
    assert_eq!(t.data_connect_per_connection, 5 * MS);
    assert_eq!(t.data_connect_for(10_000), 60 * S);
    assert_eq!(t.start, 10 * S);
    assert_eq!(t.heartbeat_interval, S);
    assert_eq!(t.peer_silence, 5 * S);
    assert_eq!(t.results, 15 * S);
}

#[test]
fn server_happy_path() {
    let (mut s, t0) = server();
    assert_eq!(s.phase(), Phase::AwaitHello);
    assert_eq!(s.frame_cap(t0), DEFAULT_MAX_FRAME_BYTES);
    let a = s.handle(t0, hello()).unwrap();
    match &a[..] {
        [Action::Send(Message::Welcome(w))] => {
            assert_eq!(w.version, PROTOCOL_VERSION);
            assert_eq!(w.software, "srv");
            assert_eq!(w.limits, Limits::default());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.phase(), Phase::AwaitTest);
    let spec = TestSpec::stream_default();
    let a = s
        .handle(
            t0,
            Message::Test(Box::new(TestRequest::unauthenticated(spec.clone()))),
        )
        .unwrap();
    assert_eq!(a, vec![Action::RequestAdmission(Box::new(spec.clone()))]);
    assert_eq!(s.phase(), Phase::AwaitAccept);
    assert_eq!(s.spec(), Some(&spec));
    assert_eq!(s.frame_cap(t0), DEFAULT_MAX_FRAME_BYTES);
    let a = s.admitted(t0, 9, token());
    assert_eq!(
        a,
        vec![Action::Send(Message::Accepted(Accepted {
            test_id: 9,
            token: token().to_hex()
        }))]
    );
    assert_eq!(s.phase(), Phase::AwaitData);
    assert_eq!(s.frame_cap(t0), results_frame_cap(&spec, Duration::ZERO));
    assert_eq!(s.data_ready(t0), vec![Action::Send(Message::Ready(EMPTY))]);
    assert_eq!(s.phase(), Phase::AwaitStart);
    assert_eq!(
        s.handle(t0, empty("start")).unwrap(),
        vec![Action::StartEngine]
    );
    assert_eq!(s.phase(), Phase::Running);
    assert_eq!(s.handle(t0, empty("heartbeat")).unwrap(), vec![]);
    let iv = interval(HostRole::Client);
    assert_eq!(
        s.handle(t0, Message::Interval(iv.clone())).unwrap(),
        vec![Action::PeerInterval(iv.clone())]
    );
    let report = full_side_report(HostRole::Server);
    assert_eq!(
        s.engine_done(t0, report.clone()),
        vec![Action::Send(Message::Results(Box::new(report)))]
    );
    assert_eq!(s.phase(), Phase::AwaitResults);
    // The client's engine may still be running.
    assert_eq!(s.handle(t0, empty("heartbeat")).unwrap(), vec![]);
    assert_eq!(
        s.handle(t0, Message::Interval(iv.clone())).unwrap(),
        vec![Action::PeerInterval(iv)]
    );
    let peer = full_side_report(HostRole::Client);
    assert_eq!(
        s.handle(t0, Message::Results(Box::new(peer.clone())))
            .unwrap(),
        vec![Action::PeerResults(Box::new(peer))]
    );
    assert_eq!(s.handle(t0, empty("bye")).unwrap(), vec![Action::Close]);
    assert_eq!(s.phase(), Phase::Done);
    assert_eq!(s.next_wakeup(), None);
    assert_eq!(s.poll(t0 + 3600 * S), Ok(vec![]));
}

#[test]
fn server_client_results_before_engine_done() {
    let (mut s, t) = server_at(Phase::Running);
    let peer = full_side_report(HostRole::Client);
    assert_eq!(
        s.handle(t, Message::Results(Box::new(peer.clone())))
            .unwrap(),
        vec![Action::PeerResults(Box::new(peer.clone()))]
    );
    assert_eq!(s.phase(), Phase::Running);
    // A second copy is a protocol error.
    let e = s.handle(t, Message::Results(Box::new(peer))).unwrap_err();
    assert_eq!(
        e,
        SessionError::Unexpected {
            phase: Phase::Running,
            got: "results"
        }
    );
    let (mut s, t) = server_at(Phase::Running);
    s.handle(
        t,
        Message::Results(Box::new(full_side_report(HostRole::Client))),
    )
    .unwrap();
    assert_eq!(
        sent(&s.engine_done(t, full_side_report(HostRole::Server))),
        ["results"]
    );
    assert_eq!(s.phase(), Phase::AwaitResults);
    assert_eq!(s.handle(t, empty("bye")).unwrap(), vec![Action::Close]);
}

#[test]
fn server_busy() {
    let (mut s, t) = server_at(Phase::AwaitAccept);
    let a = s.busy(4, 4, 2000, BusyScope::Server);
    assert_eq!(
        a,
        vec![
            Action::Send(Message::Busy(Busy {
                running: 4,
                cap: 4,
                retry_after_ms: 2000,
                scope: BusyScope::Server,
            })),
            Action::Close
        ]
    );
    assert_eq!(s.phase(), Phase::Done);
    assert_eq!(s.admitted(t, 1, token()), vec![]);
}

#[test]
fn shell_events_in_wrong_phase_are_ignored() {
    let (mut s, t) = server_at(Phase::AwaitTest);
    assert_eq!(s.admitted(t, 1, token()), vec![]);
    assert_eq!(s.busy(1, 1, 1, BusyScope::Peer), vec![]);
    assert_eq!(s.data_ready(t), vec![]);
    assert_eq!(s.engine_done(t, full_side_report(HostRole::Server)), vec![]);
    assert_eq!(s.phase(), Phase::AwaitTest);
    let (mut c, t) = client_at(Phase::AwaitAccept);
    assert_eq!(c.data_opened(t), vec![]);
    assert_eq!(c.engine_done(t, full_side_report(HostRole::Client)), vec![]);
    assert_eq!(c.phase(), Phase::AwaitAccept);
}

#[test]
fn server_bad_hellos() {
    let cases = [
        (
            Hello {
                magic: "iperf3".into(),
                version: 1,
                software: String::new(),
            },
            "magic",
        ),
        (
            Hello {
                magic: HELLO_MAGIC.into(),
                version: 99,
                software: String::new(),
            },
            "version 99",
        ),
        (
            Hello {
                magic: HELLO_MAGIC.into(),
                version: PROTOCOL_VERSION,
                software: "x".repeat(MAX_SOFTWARE_BYTES + 1),
            },
            "129 bytes",
        ),
        (
            Hello {
                magic: "é".repeat(100_000),
                version: 1,
                software: String::new(),
            },
            "…",
        ),
    ];
    for (h, needle) in cases {
        let (mut s, t0) = server();
        let e = s.handle(t0, Message::Hello(h)).unwrap_err();
        assert!(matches!(e, SessionError::BadHello(_)), "{e}");
        let text = e.to_string();
        assert!(text.contains(needle), "{text}");
        assert!(text.len() < 300, "{text}");
        assert_eq!(
            e.to_error_msg().unwrap().code,
            ErrorCode::UnsupportedVersion
        );
        assert_eq!(s.phase(), Phase::Done);
    }
    // Exactly 128 bytes is fine.
    let (mut s, t0) = server();
    s.handle(
        t0,
        Message::Hello(Hello {
            magic: HELLO_MAGIC.into(),
            version: PROTOCOL_VERSION,
            software: "x".repeat(MAX_SOFTWARE_BYTES),
        }),
    )
    .unwrap();
}

#[test]
fn server_invalid_spec() {
    let (mut s, t) = server_at(Phase::AwaitTest);
    let mut spec = TestSpec::stream_default();
    spec.common.flows = 0;
    let e = s
        .handle(
            t,
            Message::Test(Box::new(TestRequest::unauthenticated(spec))),
        )
        .unwrap_err();
    assert!(matches!(e, SessionError::InvalidSpec(_)));
    assert!(
        e.to_string().contains("common.flows: 0 is out of range"),
        "{e}"
    );
    let m = e.to_error_msg().unwrap();
    assert_eq!(m.code, ErrorCode::InvalidSpec);
    assert_eq!(m.field, Some(wirebench_model::validate::SpecField::Flows));
    assert!(
        m.message.contains("common.flows: 0 is out of range"),
        "{}",
        m.message
    );
    assert_eq!(s.phase(), Phase::Done);
    // The server's own limits apply.
    let t0 = Instant::now();
    let limits = Limits {
        max_flows: 2,
        ..Limits::default()
    };
    let mut s = ServerSession::new(t0, Timeouts::default(), limits, "srv".into());
    s.handle(t0, hello()).unwrap();
    let mut spec = TestSpec::stream_default();
    spec.common.flows = 3;
    let e = s
        .handle(
            t0,
            Message::Test(Box::new(TestRequest::unauthenticated(spec))),
        )
        .unwrap_err();
    assert_eq!(
        e.to_error_msg().unwrap().field,
        Some(wirebench_model::validate::SpecField::Flows)
    );
}

/// Every message the server does not accept in each phase.
#[test]
fn server_unexpected_messages() {
    let legal: &[(Phase, &[&str])] = &[
        (Phase::AwaitHello, &["hello", "error", "abort"]),
        (
            Phase::AwaitTest,
            &["test", "ticket_request", "third_party", "error", "abort"],
        ),
        (Phase::AwaitAccept, &["error", "abort"]),
        (Phase::AwaitData, &["error", "abort"]),
        (Phase::AwaitStart, &["start", "error", "abort"]),
        (
            Phase::Running,
            &["heartbeat", "interval", "results", "abort", "error"],
        ),
        (
            Phase::AwaitResults,
            &["heartbeat", "interval", "results", "abort", "bye", "error"],
        ),
        (Phase::Done, &["error"]),
    ];
    for &(phase, ok) in legal {
        for msg in all_messages() {
            let kind = message_kind(&msg);
            let (mut s, t) = server_at(phase);
            let r = s.handle(t, msg);
            if ok.contains(&kind) {
                if let Err(SessionError::Unexpected { .. }) = r {
                    panic!("{kind} should be legal in {phase}");
                }
            } else {
                assert_eq!(
                    r,
                    Err(SessionError::Unexpected { phase, got: kind }),
                    "{kind} in {phase}"
                );
                assert_eq!(s.phase(), Phase::Done);
                let m = r.unwrap_err().to_error_msg().unwrap();
                assert_eq!(m.code, ErrorCode::UnexpectedMessage);
                assert!(m.message.contains(kind), "{}", m.message);
            }
        }
    }
}

#[test]
fn peer_error_and_abort() {
    let err = ErrorMsg {
        code: ErrorCode::Internal,
        field: None,
        limit: None,
        message: "disk on fire".into(),
    };
    for phase in [Phase::AwaitHello, Phase::Running, Phase::AwaitResults] {
        let (mut s, t) = server_at(phase);
        let e = s.handle(t, Message::Error(err.clone())).unwrap_err();
        assert_eq!(e, SessionError::Refused(err.clone()));
        assert_eq!(e.to_string(), "peer reported internal: disk on fire");
        assert_eq!(e.to_error_msg(), None);
    }
    let abort = || {
        Message::Abort(AbortMsg {
            reason: AbortReason::Interrupted,
        })
    };
    // Before running: the session ends.
    for phase in [Phase::AwaitHello, Phase::AwaitData, Phase::AwaitStart] {
        let (mut s, t) = server_at(phase);
        let e = s.handle(t, abort()).unwrap_err();
        assert_eq!(e, SessionError::PeerAborted(AbortReason::Interrupted));
        assert_eq!(e.to_error_msg(), None);
    }
    // Running: stop the engine, results follow.
    let (mut s, t) = server_at(Phase::Running);
    assert_eq!(
        s.handle(t, abort()).unwrap(),
        vec![Action::StopEngine {
            reason: AbortReason::Interrupted
        }]
    );
    assert_eq!(s.phase(), Phase::Running);
    // Our engine already finished: nothing to do.
    let (mut s, t) = server_at(Phase::AwaitResults);
    assert_eq!(s.handle(t, abort()).unwrap(), vec![]);
    assert_eq!(s.phase(), Phase::AwaitResults);
    // Client side, same rules.
    let (mut c, t) = client_at(Phase::Running);
    assert_eq!(
        c.handle(t, abort()).unwrap(),
        vec![Action::StopEngine {
            reason: AbortReason::Interrupted
        }]
    );
    let (mut c, t) = client_at(Phase::AwaitReady);
    assert_eq!(
        c.handle(t, abort()),
        Err(SessionError::PeerAborted(AbortReason::Interrupted))
    );
    let (mut c, t) = client_at(Phase::AwaitResults);
    assert_eq!(c.handle(t, abort()).unwrap(), vec![]);
    let (mut c, t) = client_at(Phase::AwaitAccept);
    let e = c.handle(t, Message::Error(err.clone())).unwrap_err();
    assert_eq!(e, SessionError::Refused(err));
}

#[test]
fn local_abort() {
    let (mut s, _) = server_at(Phase::Running);
    assert_eq!(
        s.abort(AbortReason::ServerShutdown),
        vec![
            Action::Send(Message::Abort(AbortMsg {
                reason: AbortReason::ServerShutdown
            })),
            Action::StopEngine {
                reason: AbortReason::ServerShutdown
            }
        ]
    );
    assert_eq!(s.phase(), Phase::Running);
    let (mut s, _) = server_at(Phase::AwaitData);
    let a = s.abort(AbortReason::ServerShutdown);
    assert_eq!(sent(&a), ["abort"]);
    assert_eq!(a.last(), Some(&Action::Close));
    assert_eq!(s.phase(), Phase::Done);
    let (mut s, _) = server_at(Phase::AwaitResults);
    assert_eq!(s.abort(AbortReason::Unspecified), vec![]);
    let (mut c, _) = client_at(Phase::Running);
    assert_eq!(sent(&c.abort(AbortReason::Interrupted)), ["abort"]);
    let (mut c, _) = client_at(Phase::AwaitWelcome);
    assert_eq!(
        c.abort(AbortReason::Interrupted).last(),
        Some(&Action::Close)
    );
    assert_eq!(c.phase(), Phase::Done);
}

#[test]
fn handshake_deadline_is_absolute() {
    let (mut s, t0) = server();
    // A slow drip of frames: hello at 4.9 s, then nothing more can save it.
    s.handle(t0 + 4900 * MS, hello()).unwrap();
    assert_eq!(s.next_wakeup(), Some(t0 + 5 * S));
    assert_eq!(s.poll(t0 + 4999 * MS), Ok(vec![]));
    assert_eq!(
        s.poll(t0 + 5 * S),
        Err(SessionError::Timeout {
            phase: Phase::AwaitTest
        })
    );
    assert_eq!(s.phase(), Phase::Done);
    // Test arrives in time but admission is still pending at the deadline.
    let (mut s, t0) = server();
    s.handle(t0 + S, hello()).unwrap();
    s.handle(
        t0 + 4 * S,
        Message::Test(Box::new(TestRequest::unauthenticated(
            TestSpec::stream_default(),
        ))),
    )
    .unwrap();
    assert_eq!(s.next_wakeup(), Some(t0 + 5 * S));
    let e = s.poll(t0 + 6 * S).unwrap_err();
    assert_eq!(
        e,
        SessionError::Timeout {
            phase: Phase::AwaitAccept
        }
    );
    assert_eq!(e.to_error_msg().unwrap().code, ErrorCode::Timeout);
    assert!(e.to_string().contains("handshake"), "{e}");
    // No hello at all.
    let (mut s, t0) = server();
    assert_eq!(
        s.poll(t0 + 5 * S),
        Err(SessionError::Timeout {
            phase: Phase::AwaitHello
        })
    );
    // Client: welcome never comes; or comes but accepted does not.
    let (mut c, t0, _) = client();
    assert_eq!(c.next_wakeup(), Some(t0 + 5 * S));
    assert_eq!(
        c.poll(t0 + 5 * S),
        Err(SessionError::Timeout {
            phase: Phase::AwaitWelcome
        })
    );
    let (mut c, t0, _) = client();
    c.handle(t0 + 4 * S, welcome()).unwrap();
    assert_eq!(c.poll(t0 + 4 * S), Ok(vec![]));
    assert_eq!(
        c.poll(t0 + 5 * S),
        Err(SessionError::Timeout {
            phase: Phase::AwaitAccept
        })
    );
}

#[test]
fn phase_deadlines() {
    // Server data connections: 10 s + 5 ms for the one connection, after admission.
    let data = 10 * S + 5 * MS;
    let (mut s, t) = server_at(Phase::AwaitData);
    assert_eq!(s.next_wakeup(), Some(t + data));
    assert_eq!(s.poll(t + data - MS), Ok(vec![]));
    let e = s.poll(t + data).unwrap_err();
    assert_eq!(
        e,
        SessionError::Timeout {
            phase: Phase::AwaitData
        }
    );
    assert_eq!(e.to_error_msg().unwrap().code, ErrorCode::DataConnection);
    // Server start: 10 s after ready.
    let (mut s, t) = server_at(Phase::AwaitStart);
    assert_eq!(s.next_wakeup(), Some(t + 10 * S));
    assert_eq!(
        s.poll(t + 10 * S),
        Err(SessionError::Timeout {
            phase: Phase::AwaitStart
        })
    );
    // Server results: 15 s after our engine finished, even with heartbeats arriving.
    let (mut s, t) = server_at(Phase::AwaitResults);
    for i in 1..15 {
        s.handle(t + i * S, empty("heartbeat")).unwrap();
        let _ = s.poll(t + i * S).unwrap();
    }
    let e = s.poll(t + 15 * S).unwrap_err();
    assert_eq!(
        e,
        SessionError::Timeout {
            phase: Phase::AwaitResults
        }
    );
    assert_eq!(e.to_error_msg().unwrap().code, ErrorCode::Timeout);
    // Client: data_connect covers opening and waiting for ready.
    let (mut c, t) = client_at(Phase::AwaitData);
    assert_eq!(c.next_wakeup(), Some(t + data));
    c.data_opened(t + 9 * S);
    assert_eq!(c.phase(), Phase::AwaitReady);
    assert_eq!(c.next_wakeup(), Some(t + data));
    let e = c.poll(t + data).unwrap_err();
    assert_eq!(
        e,
        SessionError::Timeout {
            phase: Phase::AwaitReady
        }
    );
    assert_eq!(e.to_error_msg().unwrap().code, ErrorCode::DataConnection);
    let (mut c, t) = client_at(Phase::AwaitData);
    assert_eq!(
        c.poll(t + data),
        Err(SessionError::Timeout {
            phase: Phase::AwaitData
        })
    );
    // Client results: 15 s after our engine finished.
    let (mut c, t) = client_at(Phase::AwaitResults);
    for i in 1..15 {
        c.handle(t + i * S, empty("heartbeat")).unwrap();
    }
    assert_eq!(
        c.poll(t + 15 * S),
        Err(SessionError::Timeout {
            phase: Phase::AwaitResults
        })
    );
}

#[test]
fn heartbeats_and_peer_silence() {
    let (mut s, t) = server_at(Phase::Running);
    assert_eq!(s.next_wakeup(), Some(t + S));
    assert_eq!(s.poll(t + 999 * MS), Ok(vec![]));
    let hb = vec![Action::Send(Message::Heartbeat(EMPTY))];
    assert_eq!(s.poll(t + S), Ok(hb.clone()));
    assert_eq!(s.poll(t + S), Ok(vec![]));
    assert_eq!(s.next_wakeup(), Some(t + 2 * S));
    // A late poll sends one heartbeat, not a burst.
    s.handle(t + 3 * S, empty("heartbeat")).unwrap();
    assert_eq!(s.poll(t + 3500 * MS), Ok(hb.clone()));
    assert_eq!(s.poll(t + 3600 * MS), Ok(vec![]));
    assert_eq!(s.next_wakeup(), Some(t + 4500 * MS));
    // Any frame counts as liveness.
    s.handle(t + 7 * S, Message::Interval(interval(HostRole::Client)))
        .unwrap();
    assert_eq!(s.poll(t + 11 * S), Ok(hb.clone()));
    assert_eq!(s.next_wakeup(), Some(t + 12 * S));
    // Silent for 5 s: timeout.
    let e = s.poll(t + 12 * S).unwrap_err();
    assert_eq!(
        e,
        SessionError::Timeout {
            phase: Phase::Running
        }
    );
    assert_eq!(e.to_error_msg().unwrap().code, ErrorCode::Aborted);
    assert!(e.to_string().contains("sent nothing"), "{e}");
    assert_eq!(s.phase(), Phase::Done);

    // Heartbeats continue in AwaitResults, and silence still counts there.
    let (mut s, t) = server_at(Phase::AwaitResults);
    assert_eq!(s.poll(t), Ok(vec![]));
    assert_eq!(s.poll(t + S), Ok(hb.clone()));
    assert_eq!(
        s.poll(t + 5 * S),
        Err(SessionError::Timeout {
            phase: Phase::AwaitResults
        })
    );

    // The client likewise.
    let (mut c, t) = client_at(Phase::Running);
    assert_eq!(c.next_wakeup(), Some(t + S));
    assert_eq!(c.poll(t + S), Ok(hb.clone()));
    c.handle(t + 2 * S, empty("heartbeat")).unwrap();
    assert_eq!(c.poll(t + 2 * S), Ok(hb.clone()));
    assert_eq!(c.poll(t + 6 * S), Ok(hb.clone()));
    assert_eq!(c.next_wakeup(), Some(t + 7 * S));
    assert_eq!(
        c.poll(t + 7 * S),
        Err(SessionError::Timeout {
            phase: Phase::Running
        })
    );
    let (mut c, t) = client_at(Phase::AwaitResults);
    assert_eq!(c.next_wakeup(), Some(t + S));
    assert_eq!(c.poll(t + S), Ok(hb));
}

#[test]
fn no_heartbeats_before_running() {
    for phase in [Phase::AwaitHello, Phase::AwaitData, Phase::AwaitStart] {
        let (mut s, t) = server_at(phase);
        assert_eq!(s.poll(t + 2 * S), Ok(vec![]), "{phase}");
        // Heartbeats are not legal before running.
        let e = s.handle(t, empty("heartbeat")).unwrap_err();
        assert!(matches!(e, SessionError::Unexpected { .. }));
    }
}

/// A test with many data connections gets the per-connection allowance on both ends: the
/// client opens them one after another, each a kernel port scan away from the last.
#[test]
fn the_data_deadline_grows_with_the_connections() {
    let mut spec = TestSpec::stream_default();
    spec.common.flows = 10_000;
    let limits = Limits {
        max_flows: 10_000,
        ..Limits::default()
    };
    let t0 = Instant::now();
    let mut s = ServerSession::new(t0, Timeouts::default(), limits.clone(), "srv".into());
    s.handle(t0, hello()).unwrap();
    s.handle(
        t0,
        Message::Test(Box::new(TestRequest::unauthenticated(spec.clone()))),
    )
    .unwrap();
    s.admitted(t0, 7, token());
    assert_eq!(s.phase(), Phase::AwaitData);
    assert_eq!(s.next_wakeup(), Some(t0 + 60 * S));
    assert_eq!(s.poll(t0 + 59 * S), Ok(vec![]));
    assert!(s.poll(t0 + 60 * S).is_err());

    let (mut c, _) = ClientSession::new(t0, Timeouts::default(), spec, "cli".into());
    let Message::Welcome(mut w) = welcome() else {
        unreachable!()
    };
    w.limits = limits;
    c.handle(t0, Message::Welcome(w)).unwrap();
    c.handle(t0, accepted()).unwrap();
    assert_eq!(c.phase(), Phase::AwaitData);
    assert_eq!(c.next_wakeup(), Some(t0 + 60 * S));
}

#[test]
fn huge_timeouts_do_not_overflow() {
    let t0 = Instant::now();
    let timeouts = Timeouts {
        handshake: Duration::MAX,
        data_connect: Duration::MAX,
        data_connect_per_connection: Duration::MAX,
        start: Duration::MAX,
        heartbeat_interval: Duration::MAX,
        peer_silence: Duration::MAX,
        results: Duration::MAX,
    };
    let mut s = ServerSession::new(t0, timeouts, Limits::default(), "s".into());
    assert_eq!(s.next_wakeup(), None);
    s.handle(t0, hello()).unwrap();
    s.handle(
        t0,
        Message::Test(Box::new(TestRequest::unauthenticated(
            TestSpec::stream_default(),
        ))),
    )
    .unwrap();
    s.admitted(t0, 1, token());
    s.data_ready(t0);
    s.handle(t0, empty("start")).unwrap();
    assert_eq!(s.poll(t0 + 1000 * S), Ok(vec![]));
    assert_eq!(s.next_wakeup(), None);
    // A zero heartbeat interval is treated as 1 ms, not a busy loop.
    let timeouts = Timeouts {
        heartbeat_interval: Duration::ZERO,
        ..Timeouts::default()
    };
    let (mut c, _) = ClientSession::new(t0, timeouts, TestSpec::stream_default(), "c".into());
    c.handle(t0, welcome()).unwrap();
    c.handle(t0, accepted()).unwrap();
    c.handle(t0, empty("ready")).unwrap();
    assert_eq!(c.next_wakeup(), Some(t0 + MS));
    assert_eq!(c.poll(t0 + MS).unwrap().len(), 1);
    assert_eq!(c.poll(t0 + MS), Ok(vec![]));
}

#[test]
fn client_happy_path_peer_results_last() {
    let (mut c, t0, a) = client();
    assert_eq!(sent(&a), ["hello"]);
    match &a[0] {
        Action::Send(Message::Hello(h)) => {
            assert_eq!(h.magic, HELLO_MAGIC);
            assert_eq!(h.version, PROTOCOL_VERSION);
            assert_eq!(h.software, "cli");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(c.phase(), Phase::AwaitWelcome);
    assert_eq!(c.frame_cap(t0), DEFAULT_MAX_FRAME_BYTES);
    let a = c.handle(t0, welcome()).unwrap();
    assert_eq!(
        a,
        vec![Action::Send(Message::Test(Box::new(
            TestRequest::unauthenticated(TestSpec::stream_default())
        )))]
    );
    assert_eq!(c.server().unwrap().software, "srv");
    assert_eq!(c.phase(), Phase::AwaitAccept);
    let a = c.handle(t0, accepted()).unwrap();
    assert_eq!(
        a,
        vec![Action::OpenData {
            test_id: 7,
            token: token()
        }]
    );
    assert_eq!(c.test_id(), Some(7));
    assert_eq!(
        c.frame_cap(t0),
        results_frame_cap(&TestSpec::stream_default(), Duration::ZERO)
    );
    assert_eq!(c.phase(), Phase::AwaitData);
    assert_eq!(c.data_opened(t0), vec![]);
    assert_eq!(c.phase(), Phase::AwaitReady);
    let a = c.handle(t0, empty("ready")).unwrap();
    assert_eq!(
        a,
        vec![Action::Send(Message::Start(EMPTY)), Action::StartEngine]
    );
    assert_eq!(c.phase(), Phase::Running);
    let iv = interval(HostRole::Server);
    assert_eq!(
        c.handle(t0, Message::Interval(iv.clone())).unwrap(),
        vec![Action::PeerInterval(iv)]
    );
    assert_eq!(c.handle(t0, empty("heartbeat")).unwrap(), vec![]);
    let mine = full_side_report(HostRole::Client);
    assert_eq!(
        c.engine_done(t0, mine.clone()),
        vec![Action::Send(Message::Results(Box::new(mine)))]
    );
    assert_eq!(c.phase(), Phase::AwaitResults);
    let theirs = full_side_report(HostRole::Server);
    assert_eq!(
        c.handle(t0, Message::Results(Box::new(theirs.clone())))
            .unwrap(),
        vec![
            Action::PeerResults(Box::new(theirs)),
            Action::Send(Message::Bye(EMPTY)),
            Action::Close
        ]
    );
    assert_eq!(c.phase(), Phase::Done);
    assert_eq!(c.next_wakeup(), None);
}

#[test]
fn client_peer_results_first() {
    let (mut c, t) = client_at(Phase::Running);
    let theirs = full_side_report(HostRole::Server);
    assert_eq!(
        c.handle(t, Message::Results(Box::new(theirs.clone())))
            .unwrap(),
        vec![Action::PeerResults(Box::new(theirs.clone()))]
    );
    assert_eq!(c.phase(), Phase::Running);
    let mine = full_side_report(HostRole::Client);
    assert_eq!(
        c.engine_done(t, mine.clone()),
        vec![
            Action::Send(Message::Results(Box::new(mine))),
            Action::Send(Message::Bye(EMPTY)),
            Action::Close
        ]
    );
    assert_eq!(c.phase(), Phase::Done);
    // A duplicate results while running is an error.
    let (mut c, t) = client_at(Phase::Running);
    c.handle(t, Message::Results(Box::new(theirs.clone())))
        .unwrap();
    assert!(matches!(
        c.handle(t, Message::Results(Box::new(theirs))),
        Err(SessionError::Unexpected { got: "results", .. })
    ));
}

#[test]
fn client_ready_before_data_opened() {
    let (mut c, t) = client_at(Phase::AwaitData);
    assert_eq!(sent(&c.handle(t, empty("ready")).unwrap()), ["start"]);
    assert_eq!(c.phase(), Phase::Running);
    // A late data_opened is harmless.
    assert_eq!(c.data_opened(t), vec![]);
    assert_eq!(c.phase(), Phase::Running);
}

#[test]
fn client_busy_and_bad_server() {
    let busy = Busy {
        running: 4,
        cap: 4,
        retry_after_ms: 250,
        scope: wirebench_proto::message::BusyScope::Server,
    };
    let (mut c, t) = client_at(Phase::AwaitAccept);
    let e = c.handle(t, Message::Busy(busy.clone())).unwrap_err();
    assert_eq!(e, SessionError::Busy(busy.clone()));
    assert_eq!(
        e.to_string(),
        "server busy: 4 of 4 tests running (`serve --max-tests`); retry in 250 ms"
    );
    assert_eq!(e.to_error_msg(), None);
    assert_eq!(c.phase(), Phase::Done);
    let (mut c, t) = client_at(Phase::AwaitWelcome);
    assert_eq!(
        c.handle(t, Message::Busy(busy.clone())),
        Err(SessionError::Busy(busy))
    );
    // Welcome with another version.
    let (mut c, t) = client_at(Phase::AwaitWelcome);
    let e = c
        .handle(
            t,
            Message::Welcome(Welcome {
                version: PROTOCOL_VERSION + 1,
                software: "future".into(),
                limits: Limits::default(),
                nonce: "ab".repeat(32),
                server_identity: "srv".into(),
                auth_required: false,
            }),
        )
        .unwrap_err();
    assert!(matches!(e, SessionError::BadHello(_)), "{e}");
    // Limits the spec does not fit: refused locally, naming the field.
    let (mut c, t) = client_at(Phase::AwaitWelcome);
    let e = c
        .handle(
            t,
            Message::Welcome(Welcome {
                version: PROTOCOL_VERSION,
                software: "small".into(),
                limits: Limits {
                    max_duration_ms: 1000,
                    ..Limits::default()
                },
                nonce: "ab".repeat(32),
                server_identity: "srv".into(),
                auth_required: false,
            }),
        )
        .unwrap_err();
    assert_eq!(
        e.to_error_msg().unwrap().field,
        Some(wirebench_model::validate::SpecField::DurationMs)
    );
    // Malformed token.
    let (mut c, t) = client_at(Phase::AwaitAccept);
    let e = c
        .handle(
            t,
            Message::Accepted(Accepted {
                test_id: 1,
                token: "xyz".into(),
            }),
        )
        .unwrap_err();
    assert!(matches!(e, SessionError::BadMessage(_)), "{e}");
    assert!(e.to_string().contains("accepted.token"), "{e}");
    assert_eq!(e.to_error_msg().unwrap().code, ErrorCode::BadFrame);
}

#[test]
fn client_unexpected_messages() {
    let legal: &[(Phase, &[&str])] = &[
        (Phase::AwaitWelcome, &["welcome", "busy", "error", "abort"]),
        (Phase::AwaitAccept, &["accepted", "busy", "error", "abort"]),
        (Phase::AwaitData, &["ready", "error", "abort"]),
        (Phase::AwaitReady, &["ready", "error", "abort"]),
        (
            Phase::Running,
            &["heartbeat", "interval", "results", "abort", "error"],
        ),
        (
            Phase::AwaitResults,
            &["heartbeat", "interval", "results", "abort", "error"],
        ),
        (Phase::Done, &["error"]),
    ];
    for &(phase, ok) in legal {
        for msg in all_messages() {
            let kind = message_kind(&msg);
            let (mut c, t) = client_at(phase);
            let r = c.handle(t, msg);
            if ok.contains(&kind) {
                if let Err(SessionError::Unexpected { .. }) = r {
                    panic!("{kind} should be legal in {phase}");
                }
            } else {
                assert_eq!(
                    r,
                    Err(SessionError::Unexpected { phase, got: kind }),
                    "{kind} in {phase}"
                );
            }
        }
    }
}

#[test]
fn client_and_server_talk_to_each_other() {
    let t0 = Instant::now();
    let mut s = ServerSession::new(t0, Timeouts::default(), Limits::default(), "s".into());
    let (mut c, mut client_actions) = ClientSession::new(
        t0,
        Timeouts::default(),
        crate::testutil::full_spec(),
        "c".into(),
    );
    let mut server_actions = Vec::new();
    let mut log = Vec::new();
    let mut t = t0;
    while !(client_actions.is_empty() && server_actions.is_empty()) {
        t += 10 * MS;
        assert!(t < t0 + 10 * S, "{log:?}");
        // The client's shell.
        for a in std::mem::take(&mut client_actions) {
            match a {
                Action::Send(m) => {
                    // Through the wire format.
                    let frame = wirebench_proto::frame::encode(&m);
                    let m = wirebench_proto::frame::decode_payload(&frame[4..]).unwrap();
                    log.push(format!("c>{}", message_kind(&m)));
                    server_actions.extend(s.handle(t, m).unwrap());
                }
                Action::OpenData { .. } => client_actions.extend(c.data_opened(t)),
                Action::StartEngine => {
                    client_actions.extend(c.engine_done(t, full_side_report(HostRole::Client)))
                }
                Action::PeerResults(r) => assert_eq!(r.host, HostRole::Server),
                Action::Close => log.push("c:close".into()),
                other => panic!("client: {other:?}"),
            }
        }
        // The server's shell.
        for a in std::mem::take(&mut server_actions) {
            match a {
                Action::Send(m) => {
                    log.push(format!("s>{}", message_kind(&m)));
                    client_actions.extend(c.handle(t, m).unwrap());
                }
                Action::RequestAdmission(_) => {
                    server_actions.extend(s.admitted(t, 1, token()));
                    server_actions.extend(s.data_ready(t));
                }
                Action::StartEngine => {
                    server_actions.extend(s.engine_done(t, full_side_report(HostRole::Server)))
                }
                Action::PeerResults(r) => assert_eq!(r.host, HostRole::Client),
                Action::Close => log.push("s:close".into()),
                other => panic!("server: {other:?}"),
            }
        }
    }
    assert_eq!(s.phase(), Phase::Done, "{log:?}");
    assert_eq!(c.phase(), Phase::Done, "{log:?}");
    assert_eq!(
        log,
        [
            "c>hello",
            "s>welcome",
            "c>test",
            "s>accepted",
            "s>ready",
            "c>start",
            "c>results",
            "s>results",
            "c>bye",
            "c:close",
            "s:close"
        ]
    );
}

#[test]
fn results_frame_cap_bounds() {
    let spec = TestSpec::stream_default();
    assert_eq!(
        results_frame_cap(&spec, Duration::ZERO),
        DEFAULT_MAX_FRAME_BYTES + 4096
    );
    let mut big = crate::testutil::full_spec();
    big.common.flows = 128;
    big.common.duration_ms = 3_600_000;
    big.common.interval_ms = Some(100);
    let hour = Duration::from_secs(3600);
    assert_eq!(results_frame_cap(&big, hour), ABSOLUTE_MAX_FRAME_BYTES);
    // Ten seconds into an hour-long test, the allowance is ten seconds' worth (plus slack),
    // not the hour's.
    let early = results_frame_cap(&big, Duration::from_secs(10));
    let conns = u64::from(big.connection_count());
    let intervals = (10_000 + RESULTS_ELAPSED_SLACK.as_millis() as u64) / 100 + 2;
    let want = (1u64 << 20) + conns * 4096 + intervals * (128 + conns * (96 + TCP_SAMPLE_BYTES));
    assert_eq!(u64::from(early), want);
    // A flow's TCP_INFO sample at its widest fits its allowance.
    let widest = wirebench_model::side::FlowTcpSample {
        flow: u32::MAX,
        cwnd_segments: u32::MAX,
        mss_bytes: u32::MAX,
        srtt_us: u32::MAX,
        rttvar_us: u32::MAX,
        retransmits_total: u32::MAX,
        delivery_rate_bps: Some(u64::MAX),
        pacing_rate_bps: Some(u64::MAX),
        at_close: false,
    };
    let len = serde_json::to_string(&widest).unwrap().len() as u64;
    assert!(len < TCP_SAMPLE_BYTES, "{len}");
    // The sample flow report (every optional field set), its receive-wait counts at their
    // widest, fits the 4 KiB a connection is allowed.
    let Some(wirebench_model::side::SideData::Stream(st)) = full_side_report(HostRole::Server).data
    else {
        panic!("the sample report is a stream report");
    };
    let mut flow = st.flows[0].clone();
    let w = flow
        .recv_wait
        .as_mut()
        .expect("the sample sets a receive wait");
    (w.recv_calls, w.empty_polls, w.naps, w.nap_ns) = (u64::MAX, u64::MAX, u64::MAX, u64::MAX);
    (w.blocking_waits, w.small_buffer_calls, w.large_calls) = (u64::MAX, u64::MAX, u64::MAX);
    let len = serde_json::to_string(&flow).unwrap().len();
    assert!(len < 4096, "{len}");
    assert!(
        u64::from(early) < u64::from(ABSOLUTE_MAX_FRAME_BYTES) / 4,
        "{early}"
    );
    let mut hostile = big.clone();
    hostile.common.flows = u32::MAX;
    hostile.common.duration_ms = u64::MAX;
    hostile.common.warmup_ms = u64::MAX;
    hostile.common.interval_ms = Some(0);
    assert_eq!(results_frame_cap(&hostile, hour), ABSOLUTE_MAX_FRAME_BYTES);
    hostile.common.interval_ms = Some(1);
    assert_eq!(results_frame_cap(&hostile, hour), ABSOLUTE_MAX_FRAME_BYTES);
}

#[test]
fn names_and_texts() {
    assert_eq!(Phase::AwaitResults.to_string(), "await_results");
    for code in [
        ErrorCode::BadFrame,
        ErrorCode::UnexpectedMessage,
        ErrorCode::UnsupportedVersion,
        ErrorCode::InvalidSpec,
        ErrorCode::Timeout,
        ErrorCode::DataConnection,
        ErrorCode::Aborted,
        ErrorCode::Internal,
    ] {
        let json = serde_json::to_string(&code).unwrap();
        assert_eq!(json, format!("\"{}\"", code.as_str()));
    }
    for msg in all_messages() {
        let json = serde_json::to_value(&msg).unwrap();
        let tag = json.as_object().unwrap().keys().next().unwrap().clone();
        assert_eq!(tag, message_kind(&msg));
    }
    let e = SessionError::Refused(ErrorMsg {
        code: ErrorCode::InvalidSpec,
        field: Some(wirebench_model::validate::SpecField::Flows),
        limit: None,
        message: "flows = 0 is out of range".into(),
    });
    assert_eq!(
        e.to_string(),
        "peer reported invalid_spec (field common.flows): flows = 0 is out of range"
    );
    let e = SessionError::Unexpected {
        phase: Phase::AwaitTest,
        got: "start",
    };
    assert_eq!(
        e.to_string(),
        "unexpected `start` message in phase await_test"
    );
}

fn authed_server(nonce: u8) -> (ServerSession, Instant) {
    let keys = KeyTable::parse("alice 00112233445566778899aabbccddeeff\n").unwrap();
    let t0 = Instant::now();
    let s = ServerSession::new(t0, Timeouts::default(), Limits::default(), "srv".into()).with_auth(
        ServerAuth {
            nonce: Nonce([nonce; auth::NONCE_BYTES]),
            server_identity: "lab-1".into(),
            keys: Some(Arc::new(keys)),
            ..ServerAuth::default()
        },
    );
    (s, t0)
}

/// Run a client against `server` up to the `test` message; returns what the client sent.
fn client_test_message(
    server: &mut ServerSession,
    t0: Instant,
    credentials: Option<(&str, &str)>,
) -> Result<Message, SessionError> {
    let (mut c, _) = ClientSession::new(
        t0,
        Timeouts::default(),
        TestSpec::stream_default(),
        "cli".into(),
    );
    if let Some((id, key)) = credentials {
        c = c.with_credentials(id.into(), Key::from_hex(key).unwrap());
    }
    let welcome = match server.handle(t0, hello()).unwrap().as_slice() {
        [Action::Send(w)] => w.clone(),
        other => panic!("{other:?}"),
    };
    match c.handle(t0, welcome)?.as_slice() {
        [Action::Send(m @ Message::Test(_))] => Ok(m.clone()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn authenticated_handshake() {
    let (mut s, t0) = authed_server(7);
    let test = client_test_message(
        &mut s,
        t0,
        Some(("alice", "00112233445566778899aabbccddeeff")),
    )
    .unwrap();
    let a = s.handle(t0, test).unwrap();
    assert!(
        matches!(a.as_slice(), [Action::RequestAdmission(_)]),
        "{a:?}"
    );
    assert_eq!(s.identity(), Some("alice"));
}

#[test]
fn authentication_failures() {
    // No credentials: the client refuses locally, naming the server.
    let (mut s, t0) = authed_server(7);
    let e = client_test_message(&mut s, t0, None).unwrap_err();
    assert!(matches!(e, SessionError::AuthRequired { .. }), "{e}");
    assert!(e.to_string().contains("lab-1"), "{e}");
    // A client that sends no proof anyway, a wrong key, or a replayed handshake.
    let (mut s, t0) = authed_server(7);
    s.handle(t0, hello()).unwrap();
    let bare = Message::Test(Box::new(TestRequest::unauthenticated(
        TestSpec::stream_default(),
    )));
    let e1 = s.handle(t0, bare).unwrap_err();
    let (mut s, t0) = authed_server(7);
    let wrong = client_test_message(
        &mut s,
        t0,
        Some(("alice", "ffffffffffffffffffffffffffffffff")),
    )
    .unwrap();
    let e2 = s.handle(t0, wrong).unwrap_err();
    let (mut s1, t0) = authed_server(7);
    let captured = client_test_message(
        &mut s1,
        t0,
        Some(("alice", "00112233445566778899aabbccddeeff")),
    )
    .unwrap();
    let (mut s2, t0) = authed_server(8);
    s2.handle(t0, hello()).unwrap();
    let e3 = s2.handle(t0, captured).unwrap_err();
    for e in [e1, e2, e3] {
        assert_eq!(e, SessionError::Auth(AuthError::Failed));
        let m = e.to_error_msg().unwrap();
        assert_eq!(m.code, ErrorCode::AuthFailed);
        assert_eq!(m.message, "authentication failed");
        assert_eq!(m.field, None);
    }
    assert_eq!(s2.phase(), Phase::Done);
}

#[test]
fn welcome_nonce_must_be_hex() {
    let (mut c, t, _) = client();
    let e = c
        .handle(
            t,
            Message::Welcome(Welcome {
                version: PROTOCOL_VERSION,
                software: "srv".into(),
                limits: Limits::default(),
                nonce: "xyz".into(),
                server_identity: "srv".into(),
                auth_required: false,
            }),
        )
        .unwrap_err();
    assert!(matches!(e, SessionError::BadHello(_)), "{e}");
}

/// `tests/results_example.json` (a `results` message the fuzz targets start from) is the
/// current shape of a full report; `WIREBENCH_BLESS=1` rewrites it.
#[test]
fn results_example_is_current() {
    let msg = Message::Results(Box::new(full_side_report(HostRole::Client)));
    let want = serde_json::to_string_pretty(&msg).unwrap() + "\n";
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/results_example.json");
    if std::env::var_os("WIREBENCH_BLESS").is_some() {
        std::fs::write(path, &want).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap();
    assert!(
        have == want,
        "tests/results_example.json is stale: run WIREBENCH_BLESS=1 cargo test -p wirebench-proto"
    );
}
