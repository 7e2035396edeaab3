//! Fuzz target bodies, shared by the cargo-fuzz targets in `fuzz/` and by the proptests
//! (which run them on arbitrary bytes, since cargo-fuzz needs a nightly toolchain).
//!
//! Each function must never panic, whatever `data` is; a panic is a bug.

use std::time::{Duration, Instant};

use crate::data::{classify, DataHello, Token, PREAMBLE_BYTES};
use crate::frame::{decode_payload, encode, FrameDecoder};
use crate::message::{Message, TestRequest};
use crate::session::{ClientSession, ServerAuth, ServerSession, Timeouts};
use wirebench_model::spec::{Limits, TestSpec};

/// Feed `data` to a [`FrameDecoder`] in chunks whose sizes come from the data itself, pop
/// every message, and check that each decoded message re-encodes to a frame that decodes to
/// the same message. Also run the decoded messages through a server and a client session.
pub fn frame(data: &[u8]) {
    let (cap, rest) = match data.split_first() {
        // A small cap sometimes, to exercise TooLarge.
        Some((&b, rest)) if b < 16 => (u32::from(b) * 8, rest),
        Some((_, rest)) => (crate::frame::DEFAULT_MAX_FRAME_BYTES, rest),
        None => return,
    };
    let mut dec = FrameDecoder::new(cap);
    let now = Instant::now();
    let mut server = ServerSession::new(now, Timeouts::default(), Limits::default(), "fuzz".into());
    let (mut client, _) = ClientSession::new(
        now,
        Timeouts::default(),
        TestSpec::stream_default(),
        "fuzz".into(),
    );
    // The third-party states too: a daemon that issues and redeems tickets and runs
    // third-party tests, a client asking for a ticket, one asking for a third-party test.
    let book = std::sync::Arc::new(std::sync::Mutex::new(crate::ticket::TicketBook::new()));
    let mut agent = ServerSession::new(now, Timeouts::default(), Limits::default(), "fuzz".into())
        .with_auth(ServerAuth {
            tickets: Some(book),
            allow_third_party: true,
            ..ServerAuth::default()
        });
    let target = std::net::SocketAddr::from(([127, 0, 0, 1], 5301));
    let mut watchers = [
        ClientSession::new(
            now,
            Timeouts::default(),
            TestSpec::stream_default(),
            "fuzz".into(),
        )
        .0
        .ticket_request(),
        ClientSession::new(
            now,
            Timeouts::default(),
            TestSpec::stream_default(),
            "fuzz".into(),
        )
        .0
        .third_party(target, Token([7; 16])),
    ];
    let mut i = 0;
    let mut step = 0usize;
    while i < rest.len() {
        // Chunk sizes 1..=16, cycling with the data.
        let n = (usize::from(rest[i] & 0x0f) + 1 + step).min(rest.len() - i);
        step = (step + 3) % 7;
        let wanted = dec.wanted();
        if dec.feed(&rest[i..i + n]).is_err() {
            assert_eq!(dec.wanted(), 0);
            assert!(dec.next_message().is_err());
            return;
        }
        assert!(wanted > 0);
        i += n;
        loop {
            match dec.next_message() {
                Ok(Some(msg)) => {
                    check_round_trip(&msg);
                    let later = now + Duration::from_millis(i as u64);
                    let _ = server.handle(later, msg.clone());
                    let _ = agent.handle(later, msg.clone());
                    let _ = agent.poll(later);
                    for w in &mut watchers {
                        let _ = w.handle(later, msg.clone());
                        let _ = w.poll(later);
                    }
                    let _ = client.handle(later, msg);
                    let _ = server.poll(later);
                    let _ = client.poll(later);
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
    assert!(dec.buffered() <= rest.len());
}

/// Encode `msg`, decode the frame, and compare: messages without floats exactly; a results
/// message (floats, which JSON may carry one way and parse back as another within a unit in
/// the last place) by its encoding, which must come back byte for byte.
fn check_round_trip(msg: &Message) {
    let bytes = encode(msg);
    let mut dec = FrameDecoder::new(crate::frame::ABSOLUTE_MAX_FRAME_BYTES);
    dec.feed(&bytes).expect("re-encoded frame accepted");
    let back = dec
        .next_message()
        .expect("re-encoded frame decodes")
        .expect("one message");
    if matches!(msg, Message::Results(_)) {
        assert_eq!(
            String::from_utf8_lossy(&encode(&back)),
            String::from_utf8_lossy(&bytes),
            "a results message changed on its way through the wire"
        );
    } else {
        assert_eq!(&back, msg);
    }
}

/// Decode `data` as a payload and, if it is a message, hand it to a fresh server session as
/// its first frame (the hello checks).
pub fn hello(data: &[u8]) {
    let Ok(msg) = decode_payload(data) else {
        return;
    };
    check_round_trip(&msg);
    let now = Instant::now();
    let mut server = ServerSession::new(now, Timeouts::default(), Limits::default(), "fuzz".into());
    match server.handle(now, msg) {
        Ok(actions) => assert_eq!(actions.len(), 1),
        Err(e) => {
            let _ = e.to_error_msg();
            let _ = e.to_string();
        }
    }
}

/// Decode `data` as a bare [`TestSpec`] (the body of a `test` message) and validate it.
pub fn test_spec(data: &[u8]) {
    let Ok(spec) = serde_json::from_slice::<TestSpec>(data) else {
        return;
    };
    let _ = crate::session::results_frame_cap(&spec, Duration::from_secs(3600));
    let _ = spec.connection_count();
    match spec.validate(&Limits::default()) {
        Ok(()) => {
            // Only a validated spec has a bounded flow count.
            assert_eq!(spec.flow_dirs().len() as u32, spec.connection_count());
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
    check_round_trip(&Message::Test(Box::new(TestRequest::unauthenticated(spec))));
}

/// Decode `data` as a payload; if it is a `results` message, re-encode and decode it again.
pub fn results(data: &[u8]) {
    if let Ok(msg @ Message::Results(_)) = decode_payload(data) {
        check_round_trip(&msg);
    }
}

/// Classify the first four bytes of `data` as a preamble and decode the rest as a data
/// hello body; a decoded hello must re-encode to the same bytes.
pub fn data_hello(data: &[u8]) {
    if data.len() >= PREAMBLE_BYTES {
        let mut p = [0u8; PREAMBLE_BYTES];
        p.copy_from_slice(&data[..PREAMBLE_BYTES]);
        if let Err(e) = classify(&p) {
            let _ = e.to_string();
        }
        if let Ok(h) = DataHello::decode_body(&data[PREAMBLE_BYTES..]) {
            assert_eq!(&h.encode()[PREAMBLE_BYTES..], &data[PREAMBLE_BYTES..]);
        }
    }
    let _ = DataHello::decode_body(data);
}

/// UDP datagrams: `data` is split into datagrams (a length byte, then that many bytes) and
/// fed to the receiver's header parser and per-flow accounting.
pub fn udp_datagram(data: &[u8]) {
    crate::udp::fuzz_datagrams(data);
    // And the whole input as one datagram through the checked view.
    if let Ok(h) = crate::udp::DatagramHeader::parse(data) {
        let mut buf = [0u8; crate::udp::HEADER_BYTES];
        h.write(&mut buf).expect("a header fits its own size");
        assert_eq!(crate::udp::DatagramHeader::parse(&buf), Ok(h));
    }
}

/// Authentication input: a key file (the text before the first NUL) and a `test` request
/// with a proof (the JSON after it), verified against the table; nothing may panic and a
/// random proof must never verify.
pub fn auth(data: &[u8]) {
    let (keys, rest) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let table = crate::auth::KeyTable::parse(&String::from_utf8_lossy(keys));
    let Ok(req) = serde_json::from_slice::<TestRequest>(rest) else {
        return;
    };
    if let Ok(table) = table {
        let nonce = crate::auth::Nonce([0x42; crate::auth::NONCE_BYTES]);
        // A proof made without knowing the nonce's key cannot verify (2^-256).
        assert!(table
            .verify(req.auth.as_ref(), &nonce, "fuzz", &req.spec)
            .is_err());
    }
}
