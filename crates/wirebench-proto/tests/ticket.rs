//! Tests of `wirebench_proto::ticket`.

use std::time::{Duration, Instant};
use wirebench_model::spec::TestSpec;
use wirebench_proto::data::Token;
use wirebench_proto::ticket::*;

fn spec(secs: u64) -> TestSpec {
    let mut s = TestSpec::stream_default();
    s.common.duration_ms = secs * 1000;
    s
}

#[test]
fn a_ticket_is_single_use_and_bound_to_its_spec_and_lifetime() {
    let t0 = Instant::now();
    let mut book = TicketBook::new();
    let a = Token([1; 16]);
    book.issue(t0, a, Some("alice".into()), &spec(1)).unwrap();
    assert_eq!(book.redeem(t0, &a, &spec(1)), Ok(Some("alice".into())));
    // Replayed: refused.
    assert_eq!(book.redeem(t0, &a, &spec(1)), Err(TicketError::Unknown));

    // Another spec: refused, and spent.
    let b = Token([2; 16]);
    book.issue(t0, b, Some("alice".into()), &spec(1)).unwrap();
    assert_eq!(
        book.redeem(t0, &b, &spec(2)),
        Err(TicketError::SpecMismatch)
    );
    assert_eq!(book.redeem(t0, &b, &spec(1)), Err(TicketError::Unknown));

    // Expired at issue + lifetime; valid just before.
    let c = Token([3; 16]);
    book.issue(t0, c, None, &spec(1)).unwrap();
    let late = t0 + TICKET_LIFETIME;
    assert_eq!(
        book.clone().redeem(late, &c, &spec(1)),
        Err(TicketError::Unknown)
    );
    let early = late - Duration::from_millis(1);
    assert_eq!(book.redeem(early, &c, &spec(1)), Ok(None));

    // An unknown ticket.
    assert_eq!(
        book.redeem(t0, &Token([9; 16]), &spec(1)),
        Err(TicketError::Unknown)
    );
}

#[test]
fn the_book_is_bounded_and_expired_tickets_make_room() {
    let t0 = Instant::now();
    let mut book = TicketBook::new();
    for i in 0..MAX_TICKETS {
        let mut raw = [0u8; 16];
        raw[..8].copy_from_slice(&(i as u64).to_be_bytes());
        book.issue(t0, Token(raw), None, &spec(1)).unwrap();
    }
    assert_eq!(
        book.issue(t0, Token([0xff; 16]), None, &spec(1)),
        Err(TicketError::Full)
    );
    assert_eq!(book.outstanding(t0), MAX_TICKETS);
    let later = t0 + TICKET_LIFETIME;
    assert!(book.issue(later, Token([0xff; 16]), None, &spec(1)).is_ok());
    assert_eq!(book.outstanding(later), 1);
}
