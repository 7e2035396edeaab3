//! A link emulator: delay, jitter, loss, duplication and reordering between two namespaces,
//! done by our own forwarder (for kernels without the `netem` qdisc).
//!
//! # Topology
//!
//! ```text
//!  <prefix>-a                 <prefix>-m (no addresses)                 <prefix>-b
//!  wba 10.203.0.1/24 ══veth══ wbma ─► forwarder a→b ─► wbmb ══veth══ wbb 10.203.0.2/24
//!                                  ◄─ forwarder b→a ◄─
//! ```
//!
//! A and B share one L2 segment from their point of view: every frame (ARP included) that
//! A sends reaches `wbma`, where an `AF_PACKET` socket reads it; the a→b forwarder thread
//! applies its [`EmuConfig`] and writes the frame, unchanged, out of `wbmb` to B. The b→a
//! direction is independent. The packet sockets are opened by a thread that entered the
//! middle namespace, so they belong to it; the forwarder threads themselves run in the
//! caller's namespace (a socket's namespace is fixed when it is created).
//!
//! # Setup details that matter for exact counts
//!
//! * **Offloads off**: `ethtool -K <if> tso off gso off gro off tx off` on all four veth
//!   ends (checked by the tests). Otherwise: with transmit checksum offload, TCP/UDP frames
//!   leave A with only a partial (pseudo-header) checksum that nobody completes after a raw
//!   write, so B drops them (observed: the SYNs are forwarded, `connect` times out); with
//!   TSO, A hands its veth super-frames of up to 64 KiB; with GRO on the middle ends, the
//!   kernel merges consecutive segments before the packet socket sees them (observed:
//!   frames above the MTU, whose writes fail with `EMSGSIZE` and count as `send_errors`).
//! * **Outgoing frames ignored**: the receive sockets set `PACKET_IGNORE_OUTGOING` (and the
//!   forwarder also skips `PACKET_OUTGOING` frames), otherwise each direction would read
//!   back the frames the other direction writes out of the same interface and loop.
//! * **No background traffic** (default [`PathOptions`]): IPv6 is disabled in all three
//!   namespaces (no router/neighbour solicitations, no DAD, no MLD) and A and B get
//!   permanent neighbour entries for each other (no ARP). So only the frames a test sends
//!   cross the forwarder, and its counters can be compared exactly with what the endpoints
//!   observe. With `static_neighbors: false`, ARP goes through the forwarder and is
//!   impaired like everything else.
//! * **Arrival time** is the kernel's receive timestamp of the frame in the middle
//!   namespace (`SO_TIMESTAMPNS`), so a forwarder thread that is scheduled late does not
//!   shift release times; [`EmuCounters`] are exact regardless of scheduling.
//!
//! # Semantics of one direction
//!
//! Every frame read from the ingress socket is *received*. The forwarder draws exactly four
//! uniform numbers `u_loss, u_dup, u_reorder, u_jitter` in `[0, 1)` for it, from a
//! `StdRng` seeded with [`EmuConfig::seed`], so the fate of the n-th received frame depends
//! only on the seed, n and the configuration in force. Then, in this order:
//!
//! 1. a frame longer than the receive buffer (64 KiB + 256) is discarded as *oversize*
//!    (never happens with offloads off);
//! 2. `u_loss < loss`: the frame is *dropped*;
//! 3. if the queue already holds [`EmuConfig::queue_limit`] frames, it is discarded as
//!    *overflow*;
//! 4. release time `r = arrival + delay + (2·u_jitter − 1)·jitter`, not before `arrival`;
//!    then `r = max(r, release time of the previous not-held-back frame)`: jitter (and a
//!    delay lowered at run time) never reorders frames;
//! 5. `u_reorder < reorder`: the frame is *held back*: `r += reorder_gap`, and it does not
//!    move the "previous release time" of step 4, so frames arriving less than
//!    `reorder_gap` after it overtake it (it is counted in `reordered` whether or not a
//!    later frame actually overtakes it);
//! 6. `u_dup < dup`: the frame is *duplicated*: at `r` it is written twice, back to back;
//! 7. at `r` (frames with equal `r` in arrival order) the frame is written out of the
//!    egress interface; each successful write is *forwarded*, each failed one a
//!    *send error*.
//!
//! When `queued == 0`, the counters satisfy
//! `forwarded + send_errors = received − oversize − dropped − overflow + duplicated`.
//! `kernel_drops` (frames the kernel discarded because the receive buffer was full, before
//! the forwarder saw them; `PACKET_STATISTICS`) are not part of `received`.
//!
//! The forwarder waits with `ppoll` for at most 5 ms (or until the next release time, with
//! nanosecond resolution), checks its stop flag on every wake-up, and stops when the
//! [`EmulatedPath`] is dropped (or on [`EmulatedPath::shutdown`]); the namespaces are
//! deleted on drop, also when a test panics.

mod forward;
mod impair;
mod path;

pub use impair::{Direction, EmuConfig, EmuCounters, Fate, Impairer, PathCounters};
pub use path::{EmuLink, EmulatedPath, PathOptions};

/// Interface in the middle namespace facing side A.
pub const IF_MA: &str = "wbma";
/// Interface in the middle namespace facing side B.
pub const IF_MB: &str = "wbmb";

#[cfg(test)]
mod tests;
