//! How a stream's receiving flow waits while its socket is empty (`stream --recv-wait`):
//! the strategy a spec asks for and the bounds the engine applies. Re-exported from
//! [`crate::spec`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a stream's receiving flow waits while its socket has no data (`stream --recv-wait`;
/// the thread-per-flow engine on the copy, discard and splice receive paths).
///
/// A flow blocked in its receive call is on the socket's wait queue, so the sender's CPU
/// must wake it when data arrives: on a VM, an inter-processor interrupt that costs the
/// sender an exit to the host when the receiver's CPU is halted. A napping flow sleeps on
/// its own timer instead, off the wait queue, and the sender does not wake it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecvWait {
    /// `nap` where it pays and cannot hurt, `block` elsewhere (the command line's default):
    /// nap while the receive calls are at most [`NAP_MAX_CALL_BYTES`] (larger calls wake
    /// the receiver too seldom for the wake-ups to matter) and the socket's receive buffer
    /// (`SO_RCVBUF`, as autotuning leaves it) is at least [`NAP_MIN_RCVBUF_BYTES`] (so the
    /// data that arrives during a nap cannot fill the window: small `-w` windows, slow
    /// paths). On the epoll engine each worker with receiving flows does the same before a
    /// blocking `epoll_wait`, with the sum of its receiving flows' buffers against the
    /// bound, and at any call size once it serves [`NAP_SHARED_FLOWS`] of them. On the
    /// zerocopy and uring receive paths, which wait their own way, `auto` is their wait. On
    /// an Intel Xeon VM (1 s pinned loopback runs) napping took 128–512 KiB calls 16–20 %
    /// faster with no run window-limited, while at 1 MiB it gained nothing and left 9 of 25
    /// runs stuck window-limited (0 of 25 blocking).
    Auto,
    /// Block in the receive call until data arrives (what most applications do; what an
    /// absent `recv_wait` means on the wire).
    #[default]
    Block,
    /// Check the socket with a zero-timeout `poll`; while it is empty, sleep
    /// [`NAP_US`] µs on the thread's own timer, at most [`NAPS_BEFORE_BLOCK`] times, then
    /// block in the receive call.
    Nap,
    /// Check the socket with zero-timeout `poll`s, without sleeping, for up to
    /// [`SPIN_US`] µs, then block in the receive call: wake-ups are avoided with the
    /// receiver's CPU time, which its service demand then counts.
    Spin,
}

impl RecvWait {
    /// Every strategy, in documentation order.
    pub const ALL: [RecvWait; 4] = [
        RecvWait::Auto,
        RecvWait::Block,
        RecvWait::Nap,
        RecvWait::Spin,
    ];

    /// The wire name (`"auto"`, `"block"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            RecvWait::Auto => "auto",
            RecvWait::Block => "block",
            RecvWait::Nap => "nap",
            RecvWait::Spin => "spin",
        }
    }

    /// True for the wire's default, [`RecvWait::Block`].
    pub fn is_block(&self) -> bool {
        *self == RecvWait::Block
    }

    /// True for the waits only a thread-per-flow receiver on the copy, discard or splice
    /// path can make (`nap`, `spin`); `block` and `auto` run everywhere.
    pub fn needs_a_waiting_thread(&self) -> bool {
        matches!(self, RecvWait::Nap | RecvWait::Spin)
    }
}

/// One nap of [`RecvWait::Nap`], microseconds (the thread's timer slack, 50 µs by default,
/// comes on top).
pub const NAP_US: u64 = 20;
/// Naps a waiting receive takes before it blocks in the receive call.
pub const NAPS_BEFORE_BLOCK: u32 = 4;
/// The smallest socket receive buffer [`RecvWait::Auto`] naps with, bytes. A nap ends at
/// its timer, whatever arrives meanwhile: ~110 µs measured (20 µs asked plus the default
/// 50 µs timer slack and the wake-up), ~825 KB at 60 Gbit/s, half of this bound. Blocking
/// receivers at 128 KiB calls leave autotuning at ~1.87 MB on an Intel Xeon VM's loopback,
/// so a 2 MiB bound never let them nap.
pub const NAP_MIN_RCVBUF_BYTES: u64 = 3 << 19;
/// The largest receive call size [`RecvWait::Auto`] naps with, bytes, unless the receiver
/// is an epoll worker serving at least [`NAP_SHARED_FLOWS`] receiving flows.
pub const NAP_MAX_CALL_BYTES: u64 = 512 << 10;
/// Receiving flows an epoll worker serves from which [`RecvWait::Auto`] naps whatever the
/// call size: what arrives during a nap is shared among them, so no one flow's window fills
/// the way a lone 1 MiB flow's did. On an Intel Xeon VM's loopback at 1 MiB calls a
/// napping worker gained 4–8 % with 40 and with 1,000 flows (interleaved 4 s runs).
pub const NAP_SHARED_FLOWS: u32 = 8;
/// How long [`RecvWait::Spin`] polls before it blocks, microseconds.
pub const SPIN_US: u64 = 50;
