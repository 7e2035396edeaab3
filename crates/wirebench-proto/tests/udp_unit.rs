//! Tests of `wirebench_proto::udp`.

use wirebench_proto::udp::*;

fn hdr(flow: u32, seq: u64, send_ns: u64) -> [u8; HEADER_BYTES] {
    DatagramHeader { flow, seq, send_ns }.to_bytes()
}

#[test]
fn header_layout_is_big_endian() {
    let b = hdr(0x0102_0304, 0x0506_0708_090a_0b0c, 0x0d0e_0f10_1112_1314);
    assert_eq!(&b[..4], b"WBU1");
    assert_eq!(&b[4..8], &[1, 2, 3, 4]);
    assert_eq!(&b[8..16], &[5, 6, 7, 8, 9, 10, 11, 12]);
    assert_eq!(&b[16..24], &[13, 14, 15, 16, 17, 18, 19, 20]);
}

#[test]
fn parse_errors_and_payload() {
    assert_eq!(
        DatagramHeader::parse(&[]),
        Err(HeaderError::TooShort { len_bytes: 0 })
    );
    let mut b = hdr(7, 9, 11).to_vec();
    assert_eq!(
        DatagramHeader::parse(&b[..HEADER_BYTES - 1]),
        Err(HeaderError::TooShort {
            len_bytes: HEADER_BYTES - 1
        })
    );
    b.extend_from_slice(b"payload");
    let (h, p) = DatagramHeader::split(&b).unwrap();
    assert_eq!((h.flow, h.seq, h.send_ns, p), (7, 9, 11, &b"payload"[..]));
    b[0] = b'X';
    assert_eq!(
        DatagramHeader::parse(&b),
        Err(HeaderError::BadMagic { found: *b"XBU1" })
    );
    assert!(HeaderError::BadMagic { found: *b"XBU1" }
        .to_string()
        .contains("WBU1"));
}

#[test]
fn write_leaves_payload_and_rejects_short_buffers() {
    let mut buf = [0xaau8; 30];
    let h = DatagramHeader {
        flow: 1,
        seq: 2,
        send_ns: 3,
    };
    h.write(&mut buf).unwrap();
    assert_eq!(&buf[HEADER_BYTES..], &[0xaa; 6]);
    assert_eq!(DatagramHeader::parse(&buf), Ok(h));
    assert_eq!(
        h.write(&mut [0u8; 10]),
        Err(HeaderError::TooShort { len_bytes: 10 })
    );
}

#[test]
fn tracker_classifies() {
    let mut t = SeqTracker::new(64);
    assert_eq!(t.window_seqs(), 64);
    assert_eq!(t.feed(0), SeqClass::InOrder);
    assert_eq!(t.feed(3), SeqClass::InOrder);
    assert_eq!(t.feed(2), SeqClass::Late);
    assert_eq!(t.feed(2), SeqClass::Duplicate);
    assert_eq!(t.feed(3), SeqClass::Duplicate);
    assert_eq!(t.feed(0), SeqClass::Duplicate);
    assert_eq!(t.feed(1), SeqClass::Late);
    // Slide: 3 + 64 = 67 pushes 0..=3 out of the window.
    assert_eq!(t.feed(67), SeqClass::InOrder);
    assert_eq!(t.feed(3), SeqClass::TooOld);
    assert_eq!(t.feed(4), SeqClass::Late);
    assert_eq!(t.feed(4), SeqClass::Duplicate);
    // A jump larger than the window clears everything.
    assert_eq!(t.feed(1000), SeqClass::InOrder);
    assert_eq!(t.feed(999), SeqClass::Late);
    assert_eq!(t.feed(936), SeqClass::TooOld);
    assert_eq!(t.feed(937), SeqClass::Late);
    assert_eq!(t.highest(), Some(1000));
    let c = t.counts();
    assert_eq!((c.in_order, c.late, c.duplicate, c.too_old), (4, 5, 4, 2));
    assert_eq!(c.distinct(), 9);
    assert_eq!(c.total(), 15);
}

#[test]
fn tracker_window_is_clamped_to_a_power_of_two() {
    assert_eq!(SeqTracker::new(0).window_seqs(), MIN_REORDER_WINDOW_SEQS);
    assert_eq!(SeqTracker::new(100).window_seqs(), 128);
    assert_eq!(
        SeqTracker::new(u64::MAX).window_seqs(),
        MAX_REORDER_WINDOW_SEQS
    );
    assert_eq!(
        SeqTracker::new(DEFAULT_REORDER_WINDOW_SEQS).window_seqs(),
        1 << 20
    );
}

#[test]
fn tracker_extreme_sequence_numbers() {
    let mut t = SeqTracker::new(64);
    assert_eq!(t.feed(u64::MAX), SeqClass::InOrder);
    assert_eq!(t.feed(u64::MAX), SeqClass::Duplicate);
    assert_eq!(t.feed(u64::MAX - 1), SeqClass::Late);
    assert_eq!(t.feed(0), SeqClass::TooOld);
    let mut t = SeqTracker::new(64);
    assert_eq!(t.feed(u64::MAX - 5), SeqClass::InOrder);
    assert_eq!(t.feed(u64::MAX), SeqClass::InOrder);
    assert_eq!(t.feed(u64::MAX - 5), SeqClass::Duplicate);
}

#[test]
fn tracker_slide_clears_reused_slots() {
    // Every number seen once in order, then each again: all duplicates within the
    // window, too old beyond it.
    let mut t = SeqTracker::new(128);
    for s in 0..1000 {
        assert_eq!(t.feed(s), SeqClass::InOrder);
    }
    for s in 0..1000 {
        let want = if 999 - s >= 128 {
            SeqClass::TooOld
        } else {
            SeqClass::Duplicate
        };
        assert_eq!(t.feed(s), want, "seq {s}");
    }
    // Gaps left by a slide of odd size read as not seen.
    let mut t = SeqTracker::new(128);
    t.feed(0);
    t.feed(100);
    t.feed(150); // window now 23..=150; the slide cleared the slots of 101..=150
    for s in 23..100 {
        assert_eq!(t.feed(s), SeqClass::Late, "seq {s}");
    }
    assert_eq!(t.feed(22), SeqClass::TooOld);
    assert_eq!(t.feed(100), SeqClass::Duplicate);
}

#[test]
fn jitter_follows_rfc3550() {
    let mut j = JitterEstimator::new();
    j.feed(0, 1_000);
    assert_eq!(j.jitter_ns(), 0.0);
    // Transit 1000 → 1160: |D| = 160 → J = 10.
    j.feed(100, 1_260);
    assert_eq!(j.jitter_ns(), 10.0);
    // Transit 1160 → 1160: J = 10 - 10/16.
    j.feed(200, 1_360);
    assert_eq!(j.jitter_ns(), 9.375);
    // A constant clock offset does not matter.
    let mut a = JitterEstimator::new();
    let mut b = JitterEstimator::new();
    for (i, d) in [3u64, 90, 7, 400, 0, 55].iter().enumerate() {
        let s = i as u64 * 1_000;
        a.feed(s, s + 500 + d);
        b.feed(s + 1_000_000_000, s + 500 + d);
    }
    assert_eq!(a.jitter_ns(), b.jitter_ns());
    // Constant transit: no jitter.
    let mut c = JitterEstimator::new();
    for i in 0..100u64 {
        c.feed(i * 10, i * 10 + 77);
    }
    assert_eq!(c.jitter_ns(), 0.0);
}

#[test]
fn demux_routes_and_counts_invalid() {
    let w = Span {
        start_ns: 100,
        end_ns: 200,
    };
    let mut d = RecvDemux::new(vec![
        FlowRecvAccounting::new(5, 64, w),
        FlowRecvAccounting::new(2, 64, w),
    ]);
    let mut dg = hdr(2, 0, 50).to_vec();
    dg.extend_from_slice(&[0; 76]);
    assert_eq!(
        d.on_datagram(&dg, 1_000),
        DatagramOutcome::Accepted {
            flow_index: 1,
            class: SeqClass::InOrder
        }
    );
    let dg5 = hdr(5, 0, 150);
    assert_eq!(
        d.on_datagram(&dg5, 1_100),
        DatagramOutcome::Accepted {
            flow_index: 0,
            class: SeqClass::InOrder
        }
    );
    assert_eq!(
        d.on_datagram(&dg5, 1_200),
        DatagramOutcome::Accepted {
            flow_index: 0,
            class: SeqClass::Duplicate
        }
    );
    assert_eq!(
        d.on_datagram(&hdr(3, 0, 0), 0),
        DatagramOutcome::ForeignFlow(3)
    );
    assert_eq!(d.on_datagram(&dg[..5], 0), DatagramOutcome::TooShort);
    assert_eq!(d.on_datagram(&[], 0), DatagramOutcome::TooShort);
    assert_eq!(d.on_datagram(&[0u8; 40], 0), DatagramOutcome::BadMagic);
    assert_eq!(
        d.invalid(),
        UdpInvalidCounts {
            too_short: 2,
            bad_magic: 1,
            foreign_flow: 1,
            foreign_source: 0,
        }
    );
    let r = d.reports();
    assert_eq!(r[1].flow, 2);
    assert_eq!(r[1].datagrams_received, 1);
    assert_eq!(r[1].bytes_received, 100);
    // Sent at 50, before the window.
    assert_eq!(r[1].window_datagrams_received, 0);
    assert_eq!(r[0].flow, 5);
    assert_eq!(r[0].window_datagrams_received, 1);
    assert_eq!(r[0].window_bytes_received, HEADER_BYTES as u64);
    assert_eq!(r[0].window_first_arrival_ns, Some(1_100));
    assert_eq!(r[0].window_last_arrival_ns, Some(1_100));
    assert_eq!(r[0].duplicate, 1);
}

#[test]
fn missing_counts_the_gaps_below_the_highest() {
    let w = Span {
        start_ns: 0,
        end_ns: 1,
    };
    let mut acc = FlowRecvAccounting::new(4, 64, w);
    assert_eq!((acc.seq_end(), acc.missing()), (0, 0));
    let mut feed = |seq| {
        let h = DatagramHeader {
            flow: 4,
            seq,
            send_ns: 0,
        };
        acc.on_datagram(&h, 100, 0);
        (acc.seq_end(), acc.missing())
    };
    // 1 (0 missing), 4 (2, 3 too), 2 late, 2 again (duplicate), 9 (5..=8).
    assert_eq!(feed(1), (2, 1));
    assert_eq!(feed(4), (5, 3));
    assert_eq!(feed(2), (5, 2));
    assert_eq!(feed(2), (5, 2));
    assert_eq!(feed(9), (10, 6));
}

#[test]
fn reports_round_trip_through_json() {
    let mut acc = FlowRecvAccounting::new(
        1,
        DEFAULT_REORDER_WINDOW_SEQS,
        Span {
            start_ns: 0,
            end_ns: u64::MAX,
        },
    );
    for (seq, at) in [(0u64, 10u64), (2, 25), (1, 31)] {
        acc.on_datagram(
            &DatagramHeader {
                flow: 1,
                seq,
                send_ns: seq * 10,
            },
            1200,
            at,
        );
    }
    // 0, 2, 1: nothing missing; 1 was missing until it came in late.
    assert_eq!((acc.seq_end(), acc.missing()), (3, 0));
    let r = acc.report();
    let json = serde_json::to_string(&r).unwrap();
    let back: UdpRecvReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back, r);
    let s = wirebench_model::udp::UdpSendReport {
        flow: 1,
        datagram_bytes: 1200,
        target_rate_bps: Some(1_000_000),
        datagrams_sent: 3,
        bytes_sent: 3600,
        window_datagrams_sent: 3,
        window_bytes_sent: 3600,
        window: Span {
            start_ns: 0,
            end_ns: 1,
        },
        send_refused: 0,
        send_errors: 0,
        pacing_resets: 0,
        error: None,
        local: Some("127.0.0.1:4000".into()),
        peer: Some("127.0.0.1:5000".into()),
    };
    let back: wirebench_model::udp::UdpSendReport =
        serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
    let mut v = serde_json::to_value(&s).unwrap();
    v["extra"] = 1.into();
    assert!(serde_json::from_value::<wirebench_model::udp::UdpSendReport>(v).is_err());
}

#[test]
fn fuzz_body_on_simple_inputs() {
    fuzz_datagrams(&[]);
    fuzz_datagrams(&[0]);
    fuzz_datagrams(&[255, 1, 2]);
    let mut data = Vec::new();
    for (flow, seq) in [(0u32, 0u64), (0, 2), (1, 1), (0, 1), (0, 1), (9, 0)] {
        data.push(HEADER_BYTES as u8);
        data.extend_from_slice(&hdr(flow, seq, 5 << 20));
    }
    fuzz_datagrams(&data);
}
