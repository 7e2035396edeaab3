//! Third-party test tickets: a daemon's consent, given to an authenticated client, to let
//! one other host (the agent) run one test of one spec against it in that client's name.
//!
//! The target daemon keeps a [`TicketBook`]. A `ticket_request` (an authenticated client,
//! a spec within the daemon's limits) gets a fresh random [`Token`] bound to the client's
//! identity and the spec's digest, valid for [`TICKET_LIFETIME`]. A `test` that presents
//! the ticket instead of a proof is admitted as that identity once: redeeming the ticket
//! removes it, whether or not the spec matches, so a ticket is never usable twice.

use std::time::{Duration, Instant};

use thiserror::Error;
use wirebench_model::spec::TestSpec;

use crate::auth::spec_digest;
use crate::data::Token;

/// How long a ticket stays valid after it was issued.
pub const TICKET_LIFETIME: Duration = Duration::from_secs(30);

/// At most this many tickets are outstanding at once in one book.
pub const MAX_TICKETS: usize = 64;

/// Why a ticket was not issued or not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum TicketError {
    /// The book holds [`MAX_TICKETS`] unexpired tickets already.
    #[error("too many third-party tickets outstanding ({MAX_TICKETS}); retry in a few seconds")]
    Full,
    /// The ticket is unknown, was used already, or expired.
    #[error("ticket refused: unknown, already used, or expired")]
    Unknown,
    /// The ticket was issued for another spec (it is spent all the same).
    #[error("ticket refused: it was issued for another test spec")]
    SpecMismatch,
}

#[derive(Debug, Clone)]
struct Entry {
    ticket: Token,
    identity: Option<String>,
    digest: [u8; 32],
    expires: Instant,
}

/// The tickets a daemon has issued and not yet seen redeemed (bounded; time passed in).
#[derive(Debug, Clone, Default)]
pub struct TicketBook {
    entries: Vec<Entry>,
}

impl TicketBook {
    /// An empty book.
    pub fn new() -> TicketBook {
        TicketBook::default()
    }

    /// Unexpired tickets at `now`.
    pub fn outstanding(&mut self, now: Instant) -> usize {
        self.prune(now);
        self.entries.len()
    }

    fn prune(&mut self, now: Instant) {
        self.entries.retain(|e| now < e.expires);
    }

    /// Record `ticket` (fresh random bytes from the caller) for `identity` and `spec` at
    /// `now`; returns its lifetime.
    pub fn issue(
        &mut self,
        now: Instant,
        ticket: Token,
        identity: Option<String>,
        spec: &TestSpec,
    ) -> Result<Duration, TicketError> {
        self.prune(now);
        if self.entries.len() >= MAX_TICKETS {
            return Err(TicketError::Full);
        }
        self.entries.push(Entry {
            ticket,
            identity,
            digest: spec_digest(spec),
            expires: now + TICKET_LIFETIME,
        });
        Ok(TICKET_LIFETIME)
    }

    /// Spend `ticket` for `spec` at `now`: the identity it was issued to (`None` when the
    /// daemon issued it without authentication). The ticket is removed in every case.
    pub fn redeem(
        &mut self,
        now: Instant,
        ticket: &Token,
        spec: &TestSpec,
    ) -> Result<Option<String>, TicketError> {
        self.prune(now);
        let at = self
            .entries
            .iter()
            .position(|e| e.ticket.ct_eq(ticket))
            .ok_or(TicketError::Unknown)?;
        let entry = self.entries.swap_remove(at);
        if entry.digest != spec_digest(spec) {
            return Err(TicketError::SpecMismatch);
        }
        Ok(entry.identity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
