//! Tests of `wirebench_proto::frame`.

use crate::testutil::all_messages;
use wirebench_proto::frame::*;
use wirebench_proto::message::{Busy, Empty, Hello};
use wirebench_proto::message::{ErrorCode, Message};

#[test]
fn set_max_with_a_partial_frame_buffered_does_not_panic() {
    let msg = Message::Bye(Empty {});
    let bytes = encode(&msg);
    let mut dec = FrameDecoder::default();
    // Header plus part of the body: the re-scan must stop at the partial frame.
    dec.feed(&bytes[..FRAME_HEADER_BYTES + 2]).unwrap();
    dec.set_max(ABSOLUTE_MAX_FRAME_BYTES);
    dec.feed(&bytes[FRAME_HEADER_BYTES + 2..]).unwrap();
    assert_eq!(dec.next_message().unwrap(), Some(msg));
}

fn header(len: u32) -> [u8; 4] {
    len.to_be_bytes()
}

fn decode_err(json: &str) -> String {
    match decode_payload(json.as_bytes()) {
        Err(FrameError::Decode(e)) => e,
        other => panic!("expected a decode error for {json}, got {other:?}"),
    }
}

#[test]
fn every_variant_round_trips() {
    let msgs = all_messages();
    let mut stream = Vec::new();
    for msg in &msgs {
        let frame = encode(msg);
        let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(len, frame.len() - FRAME_HEADER_BYTES);
        assert_eq!(&decode_payload(&frame[4..]).unwrap(), msg);
        encode_into(msg, &mut stream);
    }
    // All frames in one feed.
    let mut dec = FrameDecoder::default();
    dec.feed(&stream).unwrap();
    for msg in &msgs {
        assert_eq!(&dec.next_message().unwrap().unwrap(), msg);
    }
    assert_eq!(dec.next_message(), Ok(None));
    assert_eq!(dec.buffered(), 0);
    // One byte at a time.
    let mut dec = FrameDecoder::default();
    let mut out = Vec::new();
    for b in &stream {
        dec.feed(std::slice::from_ref(b)).unwrap();
        while let Some(m) = dec.next_message().unwrap() {
            out.push(m);
        }
    }
    assert_eq!(out, msgs);
    // Exactly `wanted()` bytes at a time, as the I/O layer reads them.
    let mut dec = FrameDecoder::default();
    let mut out = Vec::new();
    let mut rest = &stream[..];
    while !rest.is_empty() {
        let n = dec.wanted().min(rest.len());
        assert!(n > 0);
        dec.feed(&rest[..n]).unwrap();
        rest = &rest[n..];
        while let Some(m) = dec.next_message().unwrap() {
            out.push(m);
        }
    }
    assert_eq!(out, msgs);
}

#[test]
fn json_shape_is_externally_tagged() {
    let f = encode(&Message::Heartbeat(Empty {}));
    assert_eq!(&f[..4], &[0, 0, 0, 16]);
    assert_eq!(&f[4..], br#"{"heartbeat":{}}"#);
    let f = encode(&Message::Busy(Busy {
        running: 1,
        cap: 2,
        retry_after_ms: 3,
        scope: wirebench_proto::message::BusyScope::Server,
    }));
    assert_eq!(
        &f[4..],
        br#"{"busy":{"running":1,"cap":2,"retry_after_ms":3,"scope":"server"}}"#
    );
}

#[test]
fn wanted_tracks_header_and_body() {
    let frame = encode(&Message::Bye(Empty {}));
    let body = frame.len() - 4;
    let mut dec = FrameDecoder::default();
    assert_eq!(dec.wanted(), 4);
    dec.feed(&frame[..1]).unwrap();
    assert_eq!(dec.wanted(), 3);
    dec.feed(&frame[1..4]).unwrap();
    assert_eq!(dec.wanted(), body);
    dec.feed(&frame[4..6]).unwrap();
    assert_eq!(dec.wanted(), body - 2);
    assert_eq!(dec.next_message(), Ok(None));
    dec.feed(&frame[6..]).unwrap();
    assert_eq!(dec.wanted(), 4);
    assert_eq!(dec.buffered(), frame.len());
    assert_eq!(dec.next_message(), Ok(Some(Message::Bye(Empty {}))));
    assert_eq!(dec.buffered(), 0);
    // A complete frame plus part of the next.
    let mut two = frame.clone();
    two.extend_from_slice(&frame[..5]);
    dec.feed(&two).unwrap();
    assert_eq!(dec.wanted(), body - 1);
    assert_eq!(dec.next_message(), Ok(Some(Message::Bye(Empty {}))));
    assert_eq!(dec.next_message(), Ok(None));
    assert_eq!(dec.buffered(), 5);
    dec.feed(&frame[5..]).unwrap();
    assert_eq!(dec.next_message(), Ok(Some(Message::Bye(Empty {}))));
}

#[test]
fn zero_length_is_refused() {
    let mut dec = FrameDecoder::default();
    assert_eq!(dec.feed(&header(0)), Err(FrameError::Empty));
    assert_eq!(decode_payload(b""), Err(FrameError::Empty));
}

#[test]
fn oversized_lengths_are_refused_before_allocation() {
    for len in [1u32 << 31, u32::MAX, DEFAULT_MAX_FRAME_BYTES + 1] {
        let mut dec = FrameDecoder::default();
        let e = dec.feed(&header(len)).unwrap_err();
        assert_eq!(
            e,
            FrameError::TooLarge {
                len: u64::from(len),
                max: DEFAULT_MAX_FRAME_BYTES
            }
        );
        assert!(dec.buffered() <= 4);
        assert!(dec.reserved_bytes() <= 16, "{}", dec.reserved_bytes());
        // The bytes after the bad header are not kept.
        let mut dec = FrameDecoder::default();
        let mut bytes = header(len).to_vec();
        bytes.extend_from_slice(&[b'x'; 1000]);
        assert!(dec.feed(&bytes).is_err());
        assert!(dec.buffered() <= 4);
    }
    // Header dripped one byte at a time: refused on the fourth.
    let mut dec = FrameDecoder::default();
    let h = header(u32::MAX);
    for b in &h[..3] {
        dec.feed(std::slice::from_ref(b)).unwrap();
    }
    assert!(matches!(
        dec.feed(&h[3..]),
        Err(FrameError::TooLarge { .. })
    ));
}

#[test]
fn length_at_cap_is_accepted_without_reserving_it() {
    let mut dec = FrameDecoder::new(1000);
    dec.feed(&header(1000)).unwrap();
    assert_eq!(dec.wanted(), 1000);
    assert!(dec.reserved_bytes() <= 16);
    dec.feed(&[b' '; 10]).unwrap();
    // Growth is bounded by the bytes fed and the validated length.
    assert!(dec.reserved_bytes() <= 4 + 1000);
    let mut dec = FrameDecoder::new(1000);
    assert!(matches!(
        dec.feed(&header(1001)),
        Err(FrameError::TooLarge {
            len: 1001,
            max: 1000
        })
    ));
}

#[test]
fn slow_drip_grows_geometrically_within_the_frame() {
    let msg = Message::Hello(Hello {
        magic: "x".repeat(100_000),
        version: 1,
        software: String::new(),
    });
    let frame = encode(&msg);
    let mut dec = FrameDecoder::new(200_000);
    let mut reallocs = 0;
    let mut cap = dec.reserved_bytes();
    for b in &frame {
        dec.feed(std::slice::from_ref(b)).unwrap();
        if dec.reserved_bytes() != cap {
            reallocs += 1;
            cap = dec.reserved_bytes();
        }
        assert!(cap <= frame.len());
    }
    assert!(reallocs < 40, "{reallocs}");
    assert_eq!(dec.next_message().unwrap(), Some(msg));
    // A large buffer is released once empty.
    assert_eq!(dec.reserved_bytes(), 0);
}

#[test]
fn errors_are_sticky() {
    let mut dec = FrameDecoder::default();
    let mut bytes = header(3).to_vec();
    bytes.extend_from_slice(b"{}}");
    dec.feed(&bytes).unwrap();
    let e = dec.next_message().unwrap_err();
    assert!(matches!(e, FrameError::Decode(_)));
    assert_eq!(dec.next_message(), Err(e.clone()));
    assert_eq!(dec.feed(&encode(&Message::Bye(Empty {}))), Err(e.clone()));
    assert_eq!(dec.wanted(), 0);
    let mut dec = FrameDecoder::default();
    let e = dec.feed(&header(0)).unwrap_err();
    assert_eq!(dec.next_message(), Err(e.clone()));
    assert_eq!(dec.feed(b"abc"), Err(e));
}

#[test]
fn caps_are_clamped_and_rechecked() {
    assert_eq!(FrameDecoder::new(u32::MAX).max(), ABSOLUTE_MAX_FRAME_BYTES);
    let mut dec = FrameDecoder::default();
    dec.set_max(u32::MAX);
    assert_eq!(dec.max(), ABSOLUTE_MAX_FRAME_BYTES);
    dec.feed(&header(ABSOLUTE_MAX_FRAME_BYTES)).unwrap();
    let mut dec = FrameDecoder::default();
    assert!(dec.feed(&header(ABSOLUTE_MAX_FRAME_BYTES + 1)).is_err());
    // Raising the cap lets a big frame in.
    let mut dec = FrameDecoder::new(10);
    dec.set_max(100);
    dec.feed(&header(50)).unwrap();
    // Lowering it below a buffered header fails the decoder.
    dec.set_max(20);
    assert_eq!(
        dec.next_message(),
        Err(FrameError::TooLarge { len: 50, max: 20 })
    );
}

#[test]
fn hostile_json_gives_clean_errors() {
    // serde_json's recursion limit (128) is in force: deep nesting is an error, not a
    // stack overflow, even where a value of any shape would be accepted.
    let deep = "[".repeat(100_000);
    let e = serde_json::from_str::<serde_json::Value>(&deep).unwrap_err();
    assert!(e.to_string().contains("recursion limit exceeded"), "{e}");
    let deep = "{\"a\":".repeat(100_000);
    let e = serde_json::from_str::<serde_json::Value>(&deep).unwrap_err();
    assert!(e.to_string().contains("recursion limit exceeded"), "{e}");
    // And in every position of a Message.
    for deep in [
        "[".repeat(100_000),
        "{\"a\":".repeat(100_000),
        format!("{{\"hello\":{{\"magic\":{}", "[".repeat(100_000)),
        format!("{{\"abort\":{}", "[".repeat(100_000)),
        format!(
            "{{\"results\":{{\"env\":{}",
            "{\"interface\":".repeat(100_000)
        ),
        format!("{{\"bye\":{{}}, \"x\": {}", "[".repeat(100_000)),
    ] {
        let e = decode_err(&deep);
        assert!(e.len() < 1000, "{e}");
    }
    // `cpu.system` (a wirebench-stats type) ignores unknown fields; serde_json skips an
    // ignored value iteratively, so even a deep one is no danger to the stack.
    let mut m = serde_json::to_value(Message::Results(Box::new(
        crate::testutil::full_side_report(wirebench_model::side::HostRole::Client),
    )))
    .unwrap();
    m["results"]["cpu"]["system"]["ignored"] = serde_json::json!([1]);
    let ok = m.to_string();
    assert!(decode_payload(ok.as_bytes()).is_ok());
    let balanced = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(decode_payload(ok.replacen("[1]", &balanced, 1).as_bytes()).is_ok());
    let e = decode_err(&ok.replacen("[1]", &"[".repeat(100_000), 1));
    assert!(e.len() < 1000, "{e}");
    // The same through the decoder.
    let mut dec = FrameDecoder::default();
    let payload = "[".repeat(100_000);
    dec.feed(&header(payload.len() as u32)).unwrap();
    dec.feed(payload.as_bytes()).unwrap();
    assert!(matches!(dec.next_message(), Err(FrameError::Decode(_))));

    // Invalid UTF-8 inside and outside strings.
    let e = decode_payload(b"{\"abort\":{\"reason\":\"\xff\xfe\"}}").unwrap_err();
    assert!(matches!(e, FrameError::Decode(_)), "{e}");
    assert!(decode_payload(b"\xff{}").is_err());
    assert!(decode_payload(b"{\"abort\":{\"reason\":\"\xed\xa0\x80\"}}").is_err());
    // Lone surrogate escapes.
    for lone in [
        r#""\ud800""#,
        r#""\ud800x""#,
        r#""\udc00""#,
        r#""\ud800\u0041""#,
    ] {
        let e = decode_err(&format!(r#"{{"abort":{{"reason":{lone}}}}}"#));
        assert!(e.contains("abort.reason"), "{e}");
    }
    // Numbers out of range.
    let e = decode_err(r#"{"busy":{"running":1,"cap":2,"retry_after_ms":1e999}}"#);
    assert!(e.contains("retry_after_ms"), "{e}");
    let e = decode_err(r#"{"busy":{"running":1,"cap":2,"retry_after_ms":18446744073709551616}}"#);
    assert!(e.contains("retry_after_ms"), "{e}");
    let e = decode_err(r#"{"busy":{"running":-1,"cap":2,"retry_after_ms":3}}"#);
    assert!(e.contains("running"), "{e}");
    let e = decode_err(r#"{"busy":{"running":4294967296,"cap":2,"retry_after_ms":3}}"#);
    assert!(e.contains("running"), "{e}");
    let e = decode_err(r#"{"busy":{"running":-9223372036854775809,"cap":2,"retry_after_ms":3}}"#);
    assert!(e.contains("running"), "{e}");
    let e = decode_err(r#"{"busy":{"running":1.5,"cap":2,"retry_after_ms":3}}"#);
    assert!(e.contains("running"), "{e}");
    // Trailing data, control characters, NUL, truncated input.
    assert!(decode_payload(br#"{"bye":{}} {"bye":{}}"#).is_err());
    assert!(decode_payload(b"{\"abort\":{\"reason\":\"a\x01\"}}").is_err());
    assert!(decode_payload(b"\0").is_err());
    assert!(decode_payload(br#"{"bye":{"#).is_err());
}

#[test]
fn schema_errors_name_the_field() {
    let spec = serde_json::to_value(wirebench_model::spec::TestSpec::stream_default()).unwrap();
    let mut wrong = spec.clone();
    wrong["common"]["flows"] = serde_json::json!("x");
    let e = decode_err(&serde_json::json!({ "test": { "spec": wrong, "auth": null } }).to_string());
    assert!(e.contains("`test.spec.common.flows`"), "{e}");
    assert!(e.contains("invalid type"), "{e}");

    let e = decode_err(r#"{"hello":{"magic":1,"version":1,"software":""}}"#);
    assert!(
        e.starts_with("invalid type: integer `1`, expected a string"),
        "{e}"
    );
    assert!(e.contains("hello.magic"), "{e}");

    let mut unknown = spec.clone();
    unknown["foo"] = serde_json::json!(1);
    let e =
        decode_err(&serde_json::json!({ "test": { "spec": unknown, "auth": null } }).to_string());
    assert!(e.contains("unknown field `foo`"), "{e}");
    // A field of another workload is unknown too.
    let mut other = spec.clone();
    other["workload"]["stream"]["timeout_ms"] = serde_json::json!(100);
    let e = decode_err(&serde_json::json!({ "test": { "spec": other, "auth": null } }).to_string());
    assert!(e.contains("unknown field `timeout_ms`"), "{e}");

    let mut missing = spec.clone();
    missing["common"].as_object_mut().unwrap().remove("flows");
    let e =
        decode_err(&serde_json::json!({ "test": { "spec": missing, "auth": null } }).to_string());
    assert!(e.contains("missing field `flows`"), "{e}");

    let e = decode_err(r#"{"busy":{"running":1,"running":2,"cap":2,"retry_after_ms":3}}"#);
    assert!(e.contains("duplicate field `running`"), "{e}");

    let e = decode_err(r#"{"nope":{}}"#);
    assert!(e.contains("unknown variant `nope`"), "{e}");
    assert!(decode_payload(br#"{"bye":{},"hello":{}}"#).is_err());
    assert!(decode_payload(br#"{}"#).is_err());
    assert!(decode_payload(br#""bye""#).is_err());
    let e = decode_err(r#"{"bye":{"x":1}}"#);
    assert!(e.contains("unknown field `x`"), "{e}");

    // Nested arrays: the index is part of the path.
    let mut m = serde_json::to_value(Message::Results(Box::new(
        crate::testutil::full_side_report(wirebench_model::side::HostRole::Client),
    )))
    .unwrap();
    m["results"]["data"]["stream"]["flows"][0]["socket"]["tcp_info"]["rtt_us"] =
        serde_json::json!(-5);
    let e = decode_err(&m.to_string());
    assert!(
        e.contains("`results.data.stream.flows[0].socket.tcp_info.rtt_us`"),
        "{e}"
    );
}

#[test]
fn path_finder_handles_escapes_and_lines() {
    let text = br#"{"a\"b": [1, {"c": "x,]}"}, 2], "d": "#;
    assert_eq!(json_path_at(text, text.len()), "d");
    assert_eq!(json_path_at(text, 12), "a\\\"b[1]");
    assert_eq!(byte_offset(b"ab\ncd\nef", 3, 1), 7);
    assert_eq!(byte_offset(b"ab", 9, 9), 2);
}

#[test]
fn frame_error_maps_to_bad_frame() {
    let m = FrameError::TooLarge { len: 5, max: 4 }.to_error_msg();
    assert_eq!(m.code, ErrorCode::BadFrame);
    assert!(m.message.contains("above the cap"));
}
