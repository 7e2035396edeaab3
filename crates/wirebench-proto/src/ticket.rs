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
