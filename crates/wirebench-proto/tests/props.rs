//! Property tests: the decoders never panic on arbitrary input, and generated messages
//! survive an encode/decode round trip. The fuzz target bodies run here too, on arbitrary
//! bytes, because cargo-fuzz needs a nightly toolchain.

use proptest::prelude::*;

use wirebench_model::abort::AbortReason;
use wirebench_model::side::{
    ByteInterval, FlowBytes, FlowTcpSample, HostRole, IntervalData, Role, Span,
};
use wirebench_model::spec::{
    BusyPoll, CommonSpec, CrrSpec, Direction, RecvPath, RecvWait, RrLoop, RrSpec, SendPath,
    StreamSpec, TcpOptions, TestSpec, UdpRrSpec, UdpStreamSpec, WorkloadSpec,
};
use wirebench_model::validate::SpecField;
use wirebench_proto::data::{classify, DataHello, Token, DATA_HELLO_BYTES};
use wirebench_proto::frame::{decode_payload, encode, FrameDecoder, FrameError};
use wirebench_proto::fuzz_targets;
use wirebench_proto::message::{
    AbortMsg, Busy, ErrorCode, ErrorMsg, Hello, IntervalMsg, Message, TestRequest,
};

fn hello() -> impl Strategy<Value = Hello> {
    (any::<String>(), any::<u16>(), any::<String>()).prop_map(|(magic, version, software)| Hello {
        magic,
        version,
        software,
    })
}

fn direction() -> impl Strategy<Value = Direction> {
    prop_oneof![
        Just(Direction::Forward),
        Just(Direction::Reverse),
        Just(Direction::Bidir)
    ]
}

fn common() -> impl Strategy<Value = CommonSpec> {
    (
        any::<u32>(),
        any::<u64>(),
        any::<u64>(),
        any::<Option<u64>>(),
        any::<Option<u32>>(),
        any::<Option<u32>>(),
        any::<Option<u32>>(),
        (
            any::<Option<u8>>(),
            any::<Option<u64>>(),
            any::<bool>(),
            any::<Option<u32>>(),
        ),
    )
        .prop_map(
            |(
                flows,
                duration_ms,
                warmup_ms,
                interval_ms,
                window_bytes,
                server_cpu,
                client_cpu,
                (tos, fq_rate_bps, dont_fragment, buffer_offset_bytes),
            )| {
                CommonSpec {
                    flows,
                    duration_ms,
                    warmup_ms,
                    interval_ms,
                    window_bytes,
                    server_cpu,
                    client_cpu,
                    tos,
                    fq_rate_bps,
                    dont_fragment,
                    profile_hz: None,
                    buffer_offset_bytes,
                    admission_group: None,
                }
            },
        )
}

fn tcp() -> impl Strategy<Value = TcpOptions> {
    (
        any::<Option<String>>(),
        any::<bool>(),
        any::<Option<u32>>(),
        any::<Option<u32>>(),
    )
        .prop_map(
            |(congestion, nodelay, mss_bytes, notsent_lowat_bytes)| TcpOptions {
                congestion,
                nodelay,
                mss_bytes,
                notsent_lowat_bytes,
            },
        )
}

fn stream() -> impl Strategy<Value = StreamSpec> {
    (
        direction(),
        any::<u32>(),
        any::<u32>(),
        any::<Option<u64>>(),
        prop::sample::select(SendPath::ALL.to_vec()),
        prop::sample::select(RecvPath::ALL.to_vec()),
        any::<bool>(),
        any::<Option<u32>>(),
        any::<bool>(),
        tcp(),
        any::<Option<u64>>(),
        prop::sample::select(RecvWait::ALL.to_vec()),
    )
        .prop_map(
            |(
                direction,
                send_size_bytes,
                recv_size_bytes,
                rate_bps,
                send_path,
                recv_path,
                verify,
                threads,
                pin_threads,
                tcp,
                stop_after_bytes,
                recv_wait,
            )| StreamSpec {
                direction,
                send_size_bytes,
                recv_size_bytes,
                rate_bps,
                send_path,
                recv_path,
                verify,
                threads,
                pin_threads,
                tcp,
                stop_after_bytes,
                recv_wait,
            },
        )
}

fn workload() -> impl Strategy<Value = WorkloadSpec> {
    prop_oneof![
        stream().prop_map(WorkloadSpec::Stream),
        (
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
            any::<bool>(),
            tcp(),
            any::<Option<u32>>(),
        )
            .prop_map(
                |(request_size_bytes, response_size_bytes, burst, rate, open, tcp, busy)| {
                    WorkloadSpec::Rr(RrSpec {
                        request_size_bytes,
                        response_size_bytes,
                        pacing: if open {
                            RrLoop::Open {
                                transactions_per_s: rate,
                                max_outstanding: burst,
                            }
                        } else {
                            RrLoop::Closed { burst }
                        },
                        tcp,
                        busy_poll: busy.map(|so_busy_poll_us| BusyPoll { so_busy_poll_us }),
                    })
                }
            ),
        (any::<u32>(), any::<u32>(), any::<bool>(), tcp()).prop_map(|(a, b, abortive, tcp)| {
            WorkloadSpec::Crr(CrrSpec {
                request_size_bytes: a,
                response_size_bytes: b,
                close_mode: if abortive {
                    wirebench_model::spec::CloseMode::Abortive
                } else {
                    wirebench_model::spec::CloseMode::Orderly
                },
                tcp,
            })
        }),
        (
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
            any::<Option<u32>>()
        )
            .prop_map(|(a, b, timeout_ms, busy)| {
                WorkloadSpec::UdpRr(UdpRrSpec {
                    request_size_bytes: a,
                    response_size_bytes: b,
                    timeout_ms,
                    busy_poll: busy.map(|so_busy_poll_us| BusyPoll { so_busy_poll_us }),
                })
            }),
        (direction(), any::<u32>(), any::<Option<u64>>()).prop_map(
            |(direction, datagram_bytes, rate_bps)| {
                WorkloadSpec::UdpStream(UdpStreamSpec {
                    direction,
                    datagram_bytes,
                    rate_bps,
                })
            }
        ),
    ]
}

fn spec() -> impl Strategy<Value = TestSpec> {
    (common(), workload()).prop_map(|(common, workload)| TestSpec { common, workload })
}

fn busy() -> impl Strategy<Value = Busy> {
    (any::<u32>(), any::<u32>(), any::<u64>(), any::<bool>()).prop_map(
        |(running, cap, retry_after_ms, peer)| Busy {
            running,
            cap,
            retry_after_ms,
            scope: if peer {
                wirebench_proto::message::BusyScope::Peer
            } else {
                wirebench_proto::message::BusyScope::Server
            },
        },
    )
}

fn error_msg() -> impl Strategy<Value = ErrorMsg> {
    (
        prop_oneof![
            Just(ErrorCode::BadFrame),
            Just(ErrorCode::UnexpectedMessage),
            Just(ErrorCode::UnsupportedVersion),
            Just(ErrorCode::InvalidSpec),
            Just(ErrorCode::Timeout),
            Just(ErrorCode::DataConnection),
            Just(ErrorCode::Aborted),
            Just(ErrorCode::Internal),
        ],
        proptest::option::of(prop::sample::select(vec![
            SpecField::Flows,
            SpecField::Congestion,
            SpecField::TimeoutMs,
        ])),
        any::<String>(),
    )
        .prop_map(|(code, field, message)| ErrorMsg {
            code,
            field,
            limit: None,
            message,
        })
}

fn role() -> impl Strategy<Value = Role> {
    prop_oneof![Just(Role::Sender), Just(Role::Receiver)]
}

fn tcp_sample() -> impl Strategy<Value = FlowTcpSample> {
    (
        any::<u32>(),
        any::<[u32; 5]>(),
        any::<Option<u64>>(),
        any::<Option<u64>>(),
        any::<bool>(),
    )
        .prop_map(|(flow, v, delivery, pacing, at_close)| FlowTcpSample {
            flow,
            cwnd_segments: v[0],
            mss_bytes: v[1],
            srtt_us: v[2],
            rttvar_us: v[3],
            retransmits_total: v[4],
            delivery_rate_bps: delivery,
            pacing_rate_bps: pacing,
            at_close,
        })
}

fn interval_msg() -> impl Strategy<Value = IntervalMsg> {
    (
        prop_oneof![Just(HostRole::Client), Just(HostRole::Server)],
        any::<u32>(),
        any::<u64>(),
        any::<u64>(),
        any::<bool>(),
        prop::collection::vec(
            (any::<u32>(), role(), any::<u64>()).prop_map(|(flow, role, bytes)| FlowBytes {
                flow,
                role,
                bytes,
            }),
            0..8,
        ),
        prop::collection::vec(tcp_sample(), 0..4),
    )
        .prop_map(
            |(host, index, start_ns, end_ns, in_warmup, flows, tcp)| IntervalMsg {
                host,
                sample: IntervalData::Stream(ByteInterval {
                    index,
                    span: Span { start_ns, end_ns },
                    in_warmup,
                    flows,
                    tcp,
                }),
            },
        )
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        hello().prop_map(Message::Hello),
        spec().prop_map(|s| Message::Test(Box::new(TestRequest::unauthenticated(s)))),
        busy().prop_map(Message::Busy),
        error_msg().prop_map(Message::Error),
        interval_msg().prop_map(Message::Interval),
        any::<String>().prop_map(|detail| Message::Abort(AbortMsg {
            reason: AbortReason::ProtocolError { detail }
        })),
        Just(Message::Abort(AbortMsg {
            reason: AbortReason::Interrupted
        })),
    ]
}

/// Split `bytes` at the given cut points (taken modulo the length).
fn chunks<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| if bytes.is_empty() { 0 } else { c % bytes.len() })
        .collect();
    points.push(0);
    points.push(bytes.len());
    points.sort_unstable();
    points.dedup();
    points.windows(2).map(|w| &bytes[w[0]..w[1]]).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// `set_max` between reads, as the I/O shell does before every receive, with partial
    /// frames buffered (regression: it used to step past a partial frame and panic).
    #[test]
    fn set_max_between_feeds_never_panics(
        msgs in prop::collection::vec(message(), 1..4),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
        caps in prop::collection::vec(prop_oneof![Just(16u32), Just(1u32 << 20), any::<u32>()], 1..8),
    ) {
        let mut stream = Vec::new();
        for m in &msgs {
            stream.extend(encode(m));
        }
        let mut dec = FrameDecoder::default();
        for (i, chunk) in chunks(&stream, &cuts).into_iter().enumerate() {
            dec.set_max(caps[i % caps.len()]);
            if dec.feed(chunk).is_err() {
                break;
            }
            while let Ok(Some(_)) = dec.next_message() {}
        }
    }

    #[test]
    fn decoder_never_panics(
        bytes in prop::collection::vec(any::<u8>(), 0..2048),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
        cap in prop_oneof![Just(0u32), 1u32..64, Just(1u32 << 20), any::<u32>()],
    ) {
        let mut dec = FrameDecoder::new(cap);
        for chunk in chunks(&bytes, &cuts) {
            if dec.feed(chunk).is_err() {
                break;
            }
            while let Ok(Some(_)) = dec.next_message() {}
            prop_assert!(dec.buffered() <= bytes.len());
        }
    }

    #[test]
    fn valid_frames_with_noise_never_panic(
        msgs in prop::collection::vec(message(), 1..4),
        noise in prop::collection::vec(any::<u8>(), 0..64),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
    ) {
        let mut stream = Vec::new();
        for m in &msgs {
            stream.extend(encode(m));
        }
        stream.extend(&noise);
        let mut dec = FrameDecoder::default();
        let mut out = Vec::new();
        for chunk in chunks(&stream, &cuts) {
            if dec.feed(chunk).is_err() {
                break;
            }
            while let Ok(Some(m)) = dec.next_message() {
                out.push(m);
            }
        }
        // Frames before the noise decode as sent (a bad header in the same chunk as the end
        // of a valid frame fails the decoder first, so fewer may come out).
        prop_assert!(out.len() <= msgs.len() + 1);
        let n = out.len().min(msgs.len());
        prop_assert_eq!(&out[..n], &msgs[..n]);
    }

    #[test]
    fn messages_round_trip(
        msgs in prop::collection::vec(message(), 1..6),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
    ) {
        let mut stream = Vec::new();
        for m in &msgs {
            let frame = encode(m);
            prop_assert_eq!(&decode_payload(&frame[4..]).unwrap(), m);
            stream.extend(frame);
        }
        let mut dec = FrameDecoder::default();
        let mut out = Vec::new();
        for chunk in chunks(&stream, &cuts) {
            dec.feed(chunk).unwrap();
            while let Some(m) = dec.next_message().unwrap() {
                out.push(m);
            }
        }
        prop_assert_eq!(out, msgs);
        prop_assert_eq!(dec.buffered(), 0);
        prop_assert_eq!(dec.wanted(), 4);
    }

    #[test]
    fn arbitrary_payloads_decode_or_error(payload in prop::collection::vec(any::<u8>(), 0..512)) {
        match decode_payload(&payload) {
            Ok(m) => prop_assert_eq!(decode_payload(&encode(&m)[4..]).unwrap(), m),
            Err(FrameError::Empty) => prop_assert!(payload.is_empty()),
            Err(FrameError::Decode(text)) => prop_assert!(!text.is_empty()),
            Err(e) => prop_assert!(false, "unexpected {e:?}"),
        }
    }

    #[test]
    fn arbitrary_json_text_decodes_or_errors(text in "[{}\\[\\]\":,a-z0-9 \\\\-]{0,200}") {
        let _ = decode_payload(text.as_bytes());
    }

    #[test]
    fn data_hello_and_classify_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..64),
        preamble in any::<[u8; 4]>(),
    ) {
        let _ = classify(&preamble);
        match DataHello::decode_body(&bytes) {
            Ok(h) => {
                prop_assert_eq!(bytes.len(), DATA_HELLO_BYTES);
                prop_assert_eq!(&h.encode()[4..], &bytes[..]);
            }
            Err(_) => prop_assert_ne!(bytes.len(), DATA_HELLO_BYTES),
        }
    }

    #[test]
    fn data_hello_round_trips(token in any::<[u8; 16]>(), flow in any::<u32>()) {
        let h = DataHello { token: Token(token), flow };
        let bytes = h.encode();
        prop_assert_eq!(DataHello::decode_body(&bytes[4..]).unwrap(), h);
        prop_assert_eq!(Token::from_hex(&h.token.to_hex()).unwrap(), h.token);
        prop_assert!(h.token.ct_eq(&Token(token)));
    }

    #[test]
    fn uppercase_tokens_are_refused(t in any::<[u8; 16]>()) {
        let hex = Token(t).to_hex();
        if hex.bytes().any(|b| b.is_ascii_alphabetic()) {
            prop_assert!(Token::from_hex(&hex.to_ascii_uppercase()).is_err());
        }
    }

    #[test]
    fn token_from_hex_never_panics(s in any::<String>()) {
        if let Ok(t) = Token::from_hex(&s) {
            // Lowercase only: what parses is exactly what it prints as.
            prop_assert_eq!(t.to_hex(), s);
        }
    }

    #[test]
    fn fuzz_target_frame(data in prop::collection::vec(any::<u8>(), 0..1024)) {
        fuzz_targets::frame(&data);
    }

    #[test]
    fn fuzz_target_frame_valid_messages(
        msgs in prop::collection::vec(message(), 0..4),
        first in any::<u8>(),
    ) {
        let mut data = vec![first];
        for m in &msgs {
            data.extend(encode(m));
        }
        fuzz_targets::frame(&data);
    }

    #[test]
    fn fuzz_target_udp_setup(data in prop::collection::vec(any::<u8>(), 0..64), port in 1u16..) {
        wirebench_proto::udpsetup::fuzz_udp_setup(&data);
        let msg = wirebench_proto::udpsetup::encode_port(port);
        prop_assert_eq!(wirebench_proto::udpsetup::decode_port(&msg), Ok(port));
    }

    #[test]
    fn fuzz_target_hello(data in prop::collection::vec(any::<u8>(), 0..256), h in hello()) {
        fuzz_targets::hello(&data);
        fuzz_targets::hello(&encode(&Message::Hello(h))[4..]);
    }

    #[test]
    fn fuzz_target_test_spec(data in prop::collection::vec(any::<u8>(), 0..256), s in spec()) {
        fuzz_targets::test_spec(&data);
        fuzz_targets::test_spec(&serde_json::to_vec(&s).unwrap());
    }

    #[test]
    fn fuzz_target_results(data in prop::collection::vec(any::<u8>(), 0..256)) {
        fuzz_targets::results(&data);
    }

    #[test]
    fn fuzz_target_data_hello(data in prop::collection::vec(any::<u8>(), 0..64)) {
        fuzz_targets::data_hello(&data);
    }

    #[test]
    fn fuzz_target_udp_datagram(data in prop::collection::vec(any::<u8>(), 0..512)) {
        fuzz_targets::udp_datagram(&data);
    }

    #[test]
    fn fuzz_target_auth(
        data in prop::collection::vec(any::<u8>(), 0..256),
        s in spec(),
        identity in ".{0,80}",
        mac in "[0-9a-f]{0,70}",
    ) {
        fuzz_targets::auth(&data);
        // A well-formed key file and a well-formed request with a forged proof.
        let mut input = b"alice 00112233445566778899aabbccddeeff\n\0".to_vec();
        input.extend(
            serde_json::to_vec(&TestRequest {
                spec: s,
                auth: Some(wirebench_proto::auth::AuthProof { identity, mac }),
                ticket: None,
            })
            .unwrap(),
        );
        fuzz_targets::auth(&input);
    }
}

#[test]
fn fuzz_targets_accept_valid_inputs() {
    let spec = TestSpec::stream_default();
    fuzz_targets::test_spec(&serde_json::to_vec(&spec).unwrap());
    let hello = Message::Hello(Hello {
        magic: "wirebench".into(),
        version: 1,
        software: "x".into(),
    });
    fuzz_targets::hello(&encode(&hello)[4..]);
    let results = include_str!("results_example.json");
    assert!(matches!(
        decode_payload(results.as_bytes()),
        Ok(Message::Results(_))
    ));
    fuzz_targets::results(results.as_bytes());
    let h = DataHello {
        token: Token([1; 16]),
        flow: 2,
    };
    fuzz_targets::data_hello(&h.encode());
    let mut frames = vec![0xff];
    frames.extend(encode(&hello));
    frames.extend(encode(&Message::Test(Box::new(
        TestRequest::unauthenticated(spec),
    ))));
    fuzz_targets::frame(&frames);
}
