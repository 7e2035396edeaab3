//! Property tests for the UDP datagram header and the receiver accounting: header round trip,
//! no panic on arbitrary bytes, and [`SeqTracker`] against a straightforward reference model.

use std::collections::HashSet;

use proptest::prelude::*;

use wirebench_proto::udp::{
    fuzz_datagrams, DatagramHeader, DatagramOutcome, FlowRecvAccounting, HeaderError,
    JitterEstimator, RecvDemux, SeqClass, SeqTracker, Span, HEADER_BYTES, MAGIC,
};

/// The obvious model: every sequence number ever seen in a set, and the highest.
struct Reference {
    seen: HashSet<u64>,
    highest: Option<u64>,
    window: u64,
}

impl Reference {
    fn feed(&mut self, seq: u64) -> SeqClass {
        match self.highest {
            Some(h) if seq <= h && h - seq >= self.window => SeqClass::TooOld,
            Some(h) if seq <= h => {
                if self.seen.insert(seq) {
                    SeqClass::Late
                } else {
                    SeqClass::Duplicate
                }
            }
            _ => {
                self.highest = Some(seq);
                self.seen.insert(seq);
                SeqClass::InOrder
            }
        }
    }
}

/// A flow's sequence numbers as they might arrive: 0..n with some lost, duplicated, and
/// locally shuffled (each number displaced by up to `spread` positions).
fn arrivals(max_n: u64, max_spread: u64) -> impl Strategy<Value = Vec<u64>> {
    (1..max_n, 0..=max_spread).prop_flat_map(|(n, spread)| {
        (
            Just(n),
            proptest::collection::vec((any::<u8>(), 0..=spread), n as usize),
        )
            .prop_map(|(n, per)| {
                // Sort by (position + random displacement): a bounded local shuffle.
                let mut keyed: Vec<(u64, u64)> = Vec::new();
                for (seq, (fate, jitter)) in (0..n).zip(per) {
                    match fate % 16 {
                        0 => {} // lost
                        1 | 2 => {
                            keyed.push((seq + jitter, seq));
                            keyed.push((seq + jitter / 2 + 1, seq)); // duplicate
                        }
                        _ => keyed.push((seq + jitter, seq)),
                    }
                }
                keyed.sort();
                keyed.into_iter().map(|(_, s)| s).collect()
            })
    })
}

fn check_against_reference(window: u64, seqs: &[u64]) -> Result<(), TestCaseError> {
    let mut t = SeqTracker::new(window);
    let mut r = Reference {
        seen: HashSet::new(),
        highest: None,
        window: t.window_seqs(),
    };
    let mut want = [0u64; 4];
    for &s in seqs {
        let got = t.feed(s);
        let exp = r.feed(s);
        prop_assert_eq!(got, exp, "seq {}", s);
        want[match exp {
            SeqClass::InOrder => 0,
            SeqClass::Late => 1,
            SeqClass::Duplicate => 2,
            SeqClass::TooOld => 3,
        }] += 1;
    }
    let c = t.counts();
    prop_assert_eq!([c.in_order, c.late, c.duplicate, c.too_old], want);
    prop_assert_eq!(c.total(), seqs.len() as u64);
    prop_assert_eq!(t.highest(), r.highest);
    Ok(())
}

proptest! {
    #[test]
    fn header_round_trips(flow in any::<u32>(), seq in any::<u64>(), send_ns in any::<u64>(),
                          payload in proptest::collection::vec(any::<u8>(), 0..64)) {
        let h = DatagramHeader { flow, seq, send_ns };
        let mut buf = vec![0u8; HEADER_BYTES];
        buf.extend_from_slice(&payload);
        h.write(&mut buf).unwrap();
        prop_assert_eq!(&buf[..4], &MAGIC[..]);
        prop_assert_eq!(DatagramHeader::parse(&buf), Ok(h));
        let (back, rest) = DatagramHeader::split(&buf).unwrap();
        prop_assert_eq!(back, h);
        prop_assert_eq!(rest, &payload[..]);
        prop_assert_eq!(&buf[..HEADER_BYTES], &h.to_bytes()[..]);
    }

    #[test]
    fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
        match DatagramHeader::parse(&data) {
            Ok(h) => {
                prop_assert!(data.len() >= HEADER_BYTES);
                prop_assert_eq!(&data[..HEADER_BYTES], &h.to_bytes()[..]);
            }
            Err(HeaderError::TooShort { len_bytes }) => {
                prop_assert!(data.len() < HEADER_BYTES);
                prop_assert_eq!(len_bytes, data.len());
            }
            Err(HeaderError::BadMagic { found }) => prop_assert_eq!(&found[..], &data[..4]),
        }
    }

    #[test]
    fn write_never_panics(len in 0usize..48, seq in any::<u64>()) {
        let mut buf = vec![0x5au8; len];
        let r = DatagramHeader { flow: 1, seq, send_ns: 2 }.write(&mut buf);
        prop_assert_eq!(r.is_ok(), len >= HEADER_BYTES);
        if len > HEADER_BYTES {
            prop_assert!(buf[HEADER_BYTES..].iter().all(|&b| b == 0x5a));
        }
    }

    #[test]
    fn fuzz_body_never_panics(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
        fuzz_datagrams(&data);
    }

    #[test]
    fn fuzz_body_on_mostly_valid_datagrams(
        dgrams in proptest::collection::vec((0u32..3, 0u64..300, any::<u64>(), 0u8..40), 0..200)
    ) {
        // Valid headers of flows 0..3 (2 is foreign), sometimes cut short.
        let mut data = Vec::new();
        for (flow, seq, send_ns, cut) in dgrams {
            let b = DatagramHeader { flow, seq, send_ns }.to_bytes();
            let n = if cut < 30 { HEADER_BYTES } else { usize::from(cut) % HEADER_BYTES };
            data.push(n as u8);
            data.extend_from_slice(&b[..n]);
        }
        fuzz_datagrams(&data);
    }

    #[test]
    fn tracker_matches_reference_small_window(seqs in arrivals(2_000, 300)) {
        // Shuffle spread up to 300 against a 64/128-number window: too_old happens.
        check_against_reference(64, &seqs)?;
        check_against_reference(100, &seqs)?;
    }

    #[test]
    fn tracker_matches_reference_default_window(seqs in arrivals(3_000, 50)) {
        // Everything within the default window: nothing is too old.
        let mut t = SeqTracker::new(wirebench_proto::udp::DEFAULT_REORDER_WINDOW_SEQS);
        for &s in &seqs {
            prop_assert_ne!(t.feed(s), SeqClass::TooOld);
        }
        check_against_reference(wirebench_proto::udp::DEFAULT_REORDER_WINDOW_SEQS, &seqs)?;
        let distinct: HashSet<u64> = seqs.iter().copied().collect();
        prop_assert_eq!(t.counts().distinct(), distinct.len() as u64);
        prop_assert_eq!(t.counts().duplicate, (seqs.len() - distinct.len()) as u64);
    }

    #[test]
    fn tracker_matches_reference_arbitrary(seqs in proptest::collection::vec(
        prop_oneof![0u64..500, any::<u64>(), (u64::MAX - 500)..=u64::MAX], 0..400)) {
        check_against_reference(64, &seqs)?;
        check_against_reference(1 << 10, &seqs)?;
    }

    #[test]
    fn jitter_is_offset_invariant_and_finite(
        pairs in proptest::collection::vec((0u64..1 << 40, 0u64..1 << 30), 1..100),
        offset in 0u64..1 << 60,
    ) {
        let mut a = JitterEstimator::new();
        let mut b = JitterEstimator::new();
        for (s, d) in pairs {
            a.feed(s, s + d);
            b.feed(s + offset, s + d);
        }
        prop_assert_eq!(a.jitter_ns(), b.jitter_ns());
        prop_assert!(a.jitter_ns().is_finite() && a.jitter_ns() >= 0.0);
    }

    #[test]
    fn demux_counts_every_datagram_once(seqs in arrivals(500, 20), garbage in 0usize..20) {
        let window = Span { start_ns: 100, end_ns: 400 };
        let mut d = RecvDemux::new(vec![FlowRecvAccounting::new(7, 1 << 12, window)]);
        for (i, &s) in seqs.iter().enumerate() {
            let h = DatagramHeader { flow: 7, seq: s, send_ns: s };
            let mut b = vec![0u8; 100];
            h.write(&mut b).unwrap();
            let out = d.on_datagram(&b, i as u64);
            prop_assert!(
                matches!(out, DatagramOutcome::Accepted { flow_index: 0, .. }),
                "unexpected outcome {:?}", out
            );
            if i < garbage {
                prop_assert_eq!(d.on_datagram(&b[..i % HEADER_BYTES], 0), DatagramOutcome::TooShort);
            }
        }
        let distinct: HashSet<u64> = seqs.iter().copied().collect();
        let r = &d.reports()[0];
        prop_assert_eq!(r.datagrams_received, distinct.len() as u64);
        prop_assert_eq!(r.bytes_received, 100 * distinct.len() as u64);
        prop_assert_eq!(
            r.window_datagrams_received,
            distinct.iter().filter(|&&s| (100..400).contains(&s)).count() as u64
        );
        prop_assert_eq!(d.invalid().too_short, garbage.min(seqs.len()) as u64);
    }
}
