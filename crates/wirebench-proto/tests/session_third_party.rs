//! Tests of the third-party sessions: tickets, the agent's request, relaying.
use std::sync::{Arc, Mutex};

use std::time::{Duration, Instant};
use wirebench_proto::message::Message;
use wirebench_proto::session::*;
use wirebench_proto::ticket::TicketError;

use crate::testutil::full_side_report;
use wirebench_model::side::HostRole;
use wirebench_model::spec::{Limits, TestSpec};
use wirebench_proto::auth::{Key, KeyTable, Nonce};
use wirebench_proto::data::Token;
use wirebench_proto::message::{ErrorCode, RelayOutcome, Relayed, TestRequest};
use wirebench_proto::ticket::TicketBook;

const ALICE_KEY: &str = "00112233445566778899aabbccddeeff";

fn server(
    t0: Instant,
    seed: u8,
    book: &Arc<Mutex<TicketBook>>,
    third_party: bool,
) -> ServerSession {
    let keys = KeyTable::parse(&format!("alice {ALICE_KEY}\n")).unwrap();
    ServerSession::new(t0, Timeouts::default(), Limits::default(), "srv".into()).with_auth(
        ServerAuth {
            nonce: Nonce([seed; wirebench_proto::auth::NONCE_BYTES]),
            server_identity: "lab-1".into(),
            keys: Some(Arc::new(keys)),
            tickets: Some(book.clone()),
            ticket_seed: Token([seed; 16]),
            allow_third_party: third_party,
        },
    )
}

fn client(t0: Instant, spec: &TestSpec, key: Option<&str>) -> ClientSession {
    let (c, _) = ClientSession::new(t0, Timeouts::default(), spec.clone(), "cli".into());
    match key {
        Some(k) => c.with_credentials("alice".into(), Key::from_hex(k).unwrap()),
        None => c,
    }
}

fn hello() -> Message {
    Message::Hello(wirebench_proto::message::Hello {
        magic: wirebench_proto::message::HELLO_MAGIC.into(),
        version: wirebench_proto::message::PROTOCOL_VERSION,
        software: "cli".into(),
    })
}

/// Hello → welcome → the client's request; the server's answer to it.
fn exchange(
    t0: Instant,
    s: &mut ServerSession,
    c: &mut ClientSession,
) -> Result<Vec<Action>, SessionError> {
    let welcome = match s.handle(t0, hello()).unwrap().as_slice() {
        [Action::Send(w)] => w.clone(),
        other => panic!("{other:?}"),
    };
    let request = match c.handle(t0, welcome).unwrap().as_slice() {
        [Action::Send(m)] => m.clone(),
        other => panic!("{other:?}"),
    };
    s.handle(t0, request)
}

/// A ticket from `s` for `spec`, through the client's ticket request.
fn ticket(t0: Instant, s: &mut ServerSession, spec: &TestSpec) -> Token {
    let mut c = client(t0, spec, Some(ALICE_KEY)).ticket_request();
    let acts = exchange(t0, s, &mut c).unwrap();
    assert_eq!(s.phase(), Phase::Done);
    let [Action::Send(m @ Message::Ticket(_)), Action::Close] = acts.as_slice() else {
        panic!("{acts:?}")
    };
    match c.handle(t0, m.clone()).unwrap().as_slice() {
        [Action::TicketIssued(t), Action::Close] => *t,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_ticket_admits_one_test_of_its_spec_as_its_identity() {
    let t0 = Instant::now();
    let book = Arc::new(Mutex::new(TicketBook::new()));
    let spec = TestSpec::stream_default();
    let t = ticket(t0, &mut server(t0, 1, &book, false), &spec);
    assert_eq!(t, Token([1; 16]));

    // The agent presents it instead of a proof: admitted as alice.
    let mut s = server(t0, 2, &book, false);
    let mut agent = client(t0, &spec, None).with_ticket(t);
    let acts = exchange(t0, &mut s, &mut agent).unwrap();
    assert!(
        matches!(acts.as_slice(), [Action::RequestAdmission(_)]),
        "{acts:?}"
    );
    assert_eq!(s.identity(), Some("alice"));

    // Replayed: refused, as an authentication failure.
    let mut s = server(t0, 3, &book, false);
    let mut again = client(t0, &spec, None).with_ticket(t);
    let e = exchange(t0, &mut s, &mut again).unwrap_err();
    assert!(
        matches!(e, SessionError::Ticket(TicketError::Unknown)),
        "{e}"
    );
    assert_eq!(e.to_error_msg().unwrap().code, ErrorCode::AuthFailed);

    // A ticket for another spec is refused.
    let t = ticket(t0, &mut server(t0, 4, &book, false), &spec);
    let mut other = spec.clone();
    other.common.duration_ms += 1000;
    let mut s = server(t0, 5, &book, false);
    let mut c = client(t0, &other, None).with_ticket(t);
    let e = exchange(t0, &mut s, &mut c).unwrap_err();
    assert!(
        matches!(e, SessionError::Ticket(TicketError::SpecMismatch)),
        "{e}"
    );
}

#[test]
fn a_ticket_needs_the_targets_trust() {
    let t0 = Instant::now();
    let book = Arc::new(Mutex::new(TicketBook::new()));
    let spec = TestSpec::stream_default();
    // A key the target does not know: refused like any failed authentication.
    let mut s = server(t0, 1, &book, false);
    let mut c = client(t0, &spec, Some("ffffffffffffffffffffffffffffffff")).ticket_request();
    let e = exchange(t0, &mut s, &mut c).unwrap_err();
    assert!(matches!(e, SessionError::Auth(_)), "{e}");
    assert_eq!(book.lock().unwrap().outstanding(t0), 0);
    // A spec outside the target's limits gets no ticket.
    let mut big = spec.clone();
    big.common.flows = Limits::default().max_flows + 1;
    let mut s = server(t0, 1, &book, false);
    let mut c = client(t0, &big, Some(ALICE_KEY)).ticket_request();
    // (the client checks the limits itself first)
    let welcome = match s.handle(t0, hello()).unwrap().as_slice() {
        [Action::Send(w)] => w.clone(),
        other => panic!("{other:?}"),
    };
    assert!(matches!(
        c.handle(t0, welcome),
        Err(SessionError::InvalidSpec(_))
    ));
    let req = Message::TicketRequest(Box::new(TestRequest {
        spec: big,
        auth: None,
        ticket: None,
    }));
    assert!(s.handle(t0, req).is_err());
    assert_eq!(book.lock().unwrap().outstanding(t0), 0);
}

#[test]
fn third_party_is_off_by_default_and_needs_authentication() {
    let t0 = Instant::now();
    let book = Arc::new(Mutex::new(TicketBook::new()));
    let spec = TestSpec::stream_default();
    let target = "127.0.0.1:5301".parse().unwrap();
    let mut s = server(t0, 1, &book, false);
    let mut c = client(t0, &spec, Some(ALICE_KEY)).third_party(target, Token([7; 16]));
    let e = exchange(t0, &mut s, &mut c).unwrap_err();
    let msg = e.to_error_msg().unwrap();
    assert_eq!(msg.code, ErrorCode::NotPermitted);
    assert!(
        msg.message.contains("serve --allow-third-party"),
        "{}",
        msg.message
    );

    // Allowed, but a wrong key: an authentication failure, not a permission answer.
    let mut s = server(t0, 1, &book, true);
    let mut c = client(t0, &spec, Some("ffffffffffffffffffffffffffffffff"))
        .third_party(target, Token([7; 16]));
    let e = exchange(t0, &mut s, &mut c).unwrap_err();
    assert!(matches!(e, SessionError::Auth(_)), "{e}");

    // Without credentials the client does not even ask.
    let mut s = server(t0, 1, &book, true);
    let acts = s.handle(t0, hello()).unwrap();
    let [Action::Send(w)] = acts.as_slice() else {
        panic!("{acts:?}")
    };
    let mut c = client(t0, &spec, None).third_party(target, Token([7; 16]));
    assert!(matches!(
        c.handle(t0, w.clone()),
        Err(SessionError::AuthRequired { .. })
    ));
}

#[test]
fn a_proof_covers_the_target_and_the_ticket() {
    let t0 = Instant::now();
    let book = Arc::new(Mutex::new(TicketBook::new()));
    let spec = TestSpec::stream_default();
    let target = "127.0.0.1:5301".parse().unwrap();
    let mut s = server(t0, 1, &book, true);
    let mut c = client(t0, &spec, Some(ALICE_KEY)).third_party(target, Token([7; 16]));
    let acts = s.handle(t0, hello()).unwrap();
    let [Action::Send(w)] = acts.as_slice() else {
        panic!()
    };
    let mut acts = c.handle(t0, w.clone()).unwrap();
    let Some(Action::Send(Message::ThirdParty(mut req))) = acts.pop() else {
        panic!()
    };
    // Redirected in flight to another host: the proof no longer verifies.
    req.target = "10.9.9.9:5301".into();
    let e = s.handle(t0, Message::ThirdParty(req)).unwrap_err();
    assert!(matches!(e, SessionError::Auth(_)), "{e}");
}

#[test]
fn the_agent_relays_and_the_client_gets_both_reports() {
    let t0 = Instant::now();
    let book = Arc::new(Mutex::new(TicketBook::new()));
    let spec = TestSpec::stream_default();
    let target = "127.0.0.1:5301".parse().unwrap();
    let mut s = server(t0, 1, &book, true);
    let mut c = client(t0, &spec, Some(ALICE_KEY)).third_party(target, Token([7; 16]));
    let acts = exchange(t0, &mut s, &mut c).unwrap();
    match acts.as_slice() {
        [Action::RequestThirdParty {
            target: t, ticket, ..
        }] => {
            assert_eq!(*t, target);
            assert_eq!(*ticket, Token([7; 16]));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.identity(), Some("alice"));
    assert!(s.is_relay());
    let acts = s.relaying(t0, 42);
    let [Action::Send(m)] = acts.as_slice() else {
        panic!("{acts:?}")
    };
    assert!(c.handle(t0, m.clone()).unwrap().is_empty());
    assert_eq!((c.phase(), c.test_id()), (Phase::Running, Some(42)));
    assert_eq!(s.phase(), Phase::Running);
    // Heartbeats flow both ways while the agent runs the test.
    let later = t0 + Duration::from_millis(1500);
    assert!(sent_heartbeat(&s.poll(later).unwrap()));
    assert!(sent_heartbeat(&c.poll(later).unwrap()));
    // The watching client may not send results or intervals.
    let mut s2 = s.clone();
    let r = Message::Results(Box::new(full_side_report(HostRole::Client)));
    assert!(matches!(
        s2.handle(later, r),
        Err(SessionError::Unexpected { .. })
    ));
    // It may abort: the agent stops its client.
    let abort = c.abort(wirebench_model::abort::AbortReason::Interrupted);
    let [Action::Send(a), Action::StopEngine { .. }] = abort.as_slice() else {
        panic!("{abort:?}")
    };
    assert!(matches!(
        s.handle(later, a.clone()).unwrap().as_slice(),
        [Action::StopEngine { .. }]
    ));
    let relayed = Relayed {
        outcome: RelayOutcome::Interrupted,
        client: Some(full_side_report(HostRole::Client)),
        server: Some(full_side_report(HostRole::Server)),
    };
    let acts = s.relay_done(relayed.clone());
    assert_eq!(s.phase(), Phase::Done);
    let [Action::Send(m), Action::Close] = acts.as_slice() else {
        panic!("{acts:?}")
    };
    assert!(c.frame_cap(later) >= results_frame_cap(&spec, Duration::ZERO));
    match c.handle(later, m.clone()).unwrap().as_slice() {
        [Action::Relayed(r), Action::Close] => assert_eq!(**r, relayed),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.phase(), Phase::Done);
}

#[test]
fn third_party_messages_out_of_place_are_unexpected() {
    let t0 = Instant::now();
    let spec = TestSpec::stream_default();
    // A plain test client does not take a relayed account or a ticket.
    let (mut c, _) = ClientSession::new(t0, Timeouts::default(), spec, "cli".into());
    let r = Message::Relaying(wirebench_proto::message::Relaying { test_id: 1 });
    assert!(matches!(
        c.handle(t0, r),
        Err(SessionError::Unexpected { .. })
    ));
    // A plain server session cannot be made to relay.
    let mut s = ServerSession::new(t0, Timeouts::default(), Limits::default(), "srv".into());
    assert!(s.relaying(t0, 1).is_empty());
}

fn sent_heartbeat(acts: &[Action]) -> bool {
    acts.iter()
        .any(|a| matches!(a, Action::Send(Message::Heartbeat(_))))
}

/// The agent runs the client: the spec's server CPU is the target's, not checked against
/// the agent's CPUs (a plain test is).
#[test]
fn the_agent_leaves_the_server_cpu_to_the_target() {
    let t0 = Instant::now();
    let book = Arc::new(Mutex::new(TicketBook::new()));
    let mut spec = TestSpec::stream_default();
    spec.common.server_cpu = Some(3);
    let limits = Limits {
        max_cpu: Some(0),
        ..Limits::default()
    };
    let keys = KeyTable::parse(&format!("alice {ALICE_KEY}\n")).unwrap();
    let mut agent = ServerSession::new(t0, Timeouts::default(), limits.clone(), "srv".into())
        .with_auth(ServerAuth {
            keys: Some(Arc::new(keys)),
            tickets: Some(book),
            allow_third_party: true,
            ..ServerAuth::default()
        });
    let target = "127.0.0.1:5301".parse().unwrap();
    let mut c = client(t0, &spec, Some(ALICE_KEY)).third_party(target, Token([7; 16]));
    let acts = exchange(t0, &mut agent, &mut c).unwrap();
    assert!(
        matches!(acts.as_slice(), [Action::RequestThirdParty { .. }]),
        "{acts:?}"
    );
    // The same spec as a plain test of this daemon: refused.
    let mut plain = ServerSession::new(t0, Timeouts::default(), limits, "srv".into());
    plain.handle(t0, hello()).unwrap();
    let test = Message::Test(Box::new(TestRequest::unauthenticated(spec)));
    assert!(matches!(
        plain.handle(t0, test),
        Err(SessionError::InvalidSpec(_))
    ));
}
