//! Unit tests of the impairments and the forwarder's ordering.

use std::collections::BinaryHeap;
use std::time::{Duration, Instant, SystemTime};

use super::forward::*;
use super::impair::*;
use crate::LabError;

fn deliver(f: Fate) -> (Instant, u8, bool) {
    match f {
        Fate::Deliver {
            release,
            copies,
            held_back,
        } => (release, copies, held_back),
        Fate::Lost => panic!("lost"),
    }
}

#[test]
fn validate_ranges() {
    assert!(EmuConfig::default().validate().is_ok());
    assert!(EmuConfig::default().with_loss(1.0).validate().is_ok());
    for bad in [
        EmuConfig::default().with_loss(-0.1),
        EmuConfig::default().with_dup(1.5),
        EmuConfig::default().with_reorder(f64::NAN, Duration::ZERO),
        EmuConfig {
            queue_limit: 0,
            ..EmuConfig::default()
        },
        EmuConfig::default().with_delay(Duration::from_secs(7200)),
    ] {
        assert!(
            matches!(bad.validate(), Err(LabError::InvalidConfig(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn passthrough_delivers_immediately_in_order() {
    let mut imp = Impairer::new(EmuConfig::passthrough());
    let t0 = Instant::now();
    for i in 0..1000u64 {
        let t = t0 + Duration::from_micros(i);
        assert_eq!(deliver(imp.decide(t)), (t, 1, false));
    }
}

#[test]
fn delay_is_added() {
    let d = Duration::from_millis(3);
    let mut imp = Impairer::new(EmuConfig::default().with_delay(d));
    let t0 = Instant::now();
    assert_eq!(deliver(imp.decide(t0)).0, t0 + d);
}

#[test]
fn extremes_of_probabilities() {
    let t0 = Instant::now();
    let mut all_lost = Impairer::new(EmuConfig::default().with_loss(1.0));
    let mut all_dup = Impairer::new(EmuConfig::default().with_dup(1.0));
    let mut all_held =
        Impairer::new(EmuConfig::default().with_reorder(1.0, Duration::from_millis(1)));
    for _ in 0..100 {
        assert_eq!(all_lost.decide(t0), Fate::Lost);
        assert_eq!(deliver(all_dup.decide(t0)).1, 2);
        assert_eq!(
            deliver(all_held.decide(t0)),
            (t0 + Duration::from_millis(1), 1, true)
        );
    }
}

#[test]
fn same_seed_same_fates_and_rates() {
    let cfg = EmuConfig {
        loss: 0.2,
        dup: 0.1,
        reorder: 0.05,
        jitter: Duration::from_millis(2),
        delay: Duration::from_millis(5),
        seed: 42,
        ..EmuConfig::default()
    };
    let t0 = Instant::now();
    let run = |cfg: EmuConfig| {
        let mut imp = Impairer::new(cfg);
        (0..20_000u64)
            .map(|i| imp.decide(t0 + Duration::from_micros(100 * i)))
            .collect::<Vec<_>>()
    };
    let a = run(cfg.clone());
    assert_eq!(a, run(cfg.clone()));
    assert_ne!(a, run(cfg.clone().with_seed(43)));
    let lost = a.iter().filter(|f| **f == Fate::Lost).count() as f64;
    let kept: Vec<_> = a
        .iter()
        .filter(|f| **f != Fate::Lost)
        .map(|f| deliver(*f))
        .collect();
    let dups = kept.iter().filter(|k| k.1 == 2).count() as f64;
    let held = kept.iter().filter(|k| k.2).count() as f64;
    let n = a.len() as f64;
    assert!((lost / n - 0.2).abs() < 0.02, "{lost}");
    assert!((dups / kept.len() as f64 - 0.1).abs() < 0.015, "{dups}");
    assert!((held / kept.len() as f64 - 0.05).abs() < 0.01, "{held}");
}

#[test]
fn jitter_stays_in_bounds_and_never_reorders() {
    let delay = Duration::from_millis(10);
    let jitter = Duration::from_millis(4);
    let mut imp = Impairer::new(EmuConfig {
        delay,
        jitter,
        ..EmuConfig::default()
    });
    let t0 = Instant::now();
    let mut prev: Option<Instant> = None;
    let mut spread = (Duration::MAX, Duration::ZERO);
    for i in 0..10_000u64 {
        let arrival = t0 + Duration::from_millis(i);
        let (r, _, _) = deliver(imp.decide(arrival));
        let d = r - arrival;
        assert!(d <= delay + jitter, "{d:?}");
        spread = (spread.0.min(d), spread.1.max(d));
        if let Some(p) = prev {
            assert!(r >= p);
        }
        prev = Some(r);
    }
    // Arrivals 1 ms apart: the order clamp rarely binds at the low end.
    assert!(
        spread.0 < delay - jitter + Duration::from_millis(1),
        "{spread:?}"
    );
    assert!(
        spread.1 > delay + jitter - Duration::from_millis(1),
        "{spread:?}"
    );
}

#[test]
fn negative_jitter_never_before_arrival() {
    let mut imp = Impairer::new(EmuConfig {
        delay: Duration::from_millis(1),
        jitter: Duration::from_millis(5),
        ..EmuConfig::default()
    });
    let t0 = Instant::now();
    for i in 0..1000u64 {
        let arrival = t0 + Duration::from_secs(i);
        assert!(deliver(imp.decide(arrival)).0 >= arrival);
    }
}

#[test]
fn held_back_frames_are_overtaken_by_later_ones_only() {
    let gap = Duration::from_millis(10);
    let mut imp = Impairer::new(EmuConfig::default().with_reorder(0.3, gap).with_seed(7));
    let t0 = Instant::now();
    let fates: Vec<_> = (0..2000u64)
        .map(|i| deliver(imp.decide(t0 + Duration::from_millis(i))))
        .collect();
    let mut last_normal = None;
    for (i, (r, _, held)) in fates.iter().enumerate() {
        let arrival = t0 + Duration::from_millis(i as u64);
        if *held {
            assert_eq!(*r, arrival + gap);
        } else {
            assert_eq!(*r, arrival);
            if let Some(p) = last_normal {
                assert!(*r >= p);
            }
            last_normal = Some(*r);
        }
    }
    // Changing the config without changing the seed continues the stream.
    let mut b = Impairer::new(EmuConfig::default().with_seed(9));
    b.decide(t0);
    b.set_config(EmuConfig::default().with_seed(9).with_loss(0.5));
    let mut c = Impairer::new(EmuConfig::default().with_seed(9).with_loss(0.5));
    let from_b: Vec<_> = (0..50).map(|_| b.decide(t0) == Fate::Lost).collect();
    let from_c: Vec<_> = (0..50).map(|_| c.decide(t0) == Fate::Lost).collect();
    assert_ne!(from_b, from_c, "stream must continue, not restart");
}

#[test]
fn heap_order_is_release_then_arrival() {
    let t0 = Instant::now();
    let mut heap = BinaryHeap::new();
    for (seq, ms) in [(0u64, 5u64), (1, 1), (2, 5), (3, 0)] {
        heap.push(Held {
            release: t0 + Duration::from_millis(ms),
            seq,
            copies: 1,
            frame: Vec::new(),
        });
    }
    let order: Vec<u64> = std::iter::from_fn(|| heap.pop().map(|h| h.seq)).collect();
    assert_eq!(order, vec![3, 1, 0, 2]);
}

#[test]
fn arrival_from_timestamp() {
    let now = Instant::now();
    assert_eq!(arrival_instant(None, now), now);
    let ts = SystemTime::now() - Duration::from_millis(3);
    let a = arrival_instant(Some(ts), now);
    assert!(now - a >= Duration::from_millis(3) && now - a < Duration::from_millis(500));
    // Implausible timestamps fall back to the read time.
    assert_eq!(arrival_instant(Some(SystemTime::UNIX_EPOCH), now), now);
    let future = SystemTime::now() + Duration::from_secs(10);
    assert_eq!(arrival_instant(Some(future), now), now);
}

#[test]
fn balance_law() {
    let c = EmuCounters {
        received: 10,
        dropped: 2,
        duplicated: 3,
        forwarded: 10,
        send_errors: 1,
        ..EmuCounters::default()
    };
    assert!(c.balanced());
    assert!(!EmuCounters { forwarded: 9, ..c }.balanced());
}
