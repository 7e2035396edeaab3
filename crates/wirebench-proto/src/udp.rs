//! The UDP stream workload's wire header and receiver accounting, with no I/O.
//!
//! # Datagram layout
//!
//! Every datagram of a UDP flow starts with a fixed [`HEADER_BYTES`]-byte header, all fields
//! big-endian; the rest of the datagram is payload (random bytes, never interpreted):
//!
//! ```text
//!  0               4               8                              16                             24
//!  +---------------+---------------+------------------------------+------------------------------+---------
//!  | magic "WBU1"  | flow id (u32) | sequence number (u64)        | send time, ns (u64)          | payload
//!  +---------------+---------------+------------------------------+------------------------------+---------
//! ```
//!
//! - The sequence number counts a flow's datagrams from 0, one per datagram handed to the
//!   kernel (a datagram whose send failed keeps its number; the next one gets the next).
//! - The send time is the sender's monotonic clock, ns after the sender's own start instant.
//!   It is only ever compared with other send times of the same sender (jitter, window
//!   membership), so the two ends' clocks never need to agree.
//!
//! # No panics after the length check
//!
//! [`DatagramHeader::parse`] and [`DatagramHeader::write`] take the first [`HEADER_BYTES`] of
//! the buffer as a fixed-size array (`first_chunk`), which is the one length check; everything
//! after it is done with irrefutable array patterns and `from_be_bytes`, with no slice
//! indexing, no arithmetic that can overflow and no `unwrap`. Nothing in this module panics on
//! any input; [`fuzz_datagrams`] checks that on arbitrary bytes.
//!
//! # Receiver accounting
//!
//! [`SeqTracker`] classifies each datagram of a flow by its sequence number (in order, late,
//! duplicate, too old) with a bounded sliding bitmap; [`JitterEstimator`] keeps the RFC 3550
//! interarrival jitter; [`FlowRecvAccounting`] combines them with byte and window counts for
//! one flow, and [`RecvDemux`] routes the datagrams of one receive socket to their flows by
//! header flow id and counts the ones that belong to no flow.
//!
//! # Loss
//!
//! Nothing here computes loss: a receiver cannot tell a lost datagram from one still in
//! flight. The report layer computes it from both ends' reports:
//! `lost = UdpSendReport::datagrams_sent − UdpRecvReport::datagrams_received` over the whole
//! test, or the same with the `window_*` counts over the sender's measurement window (both
//! ends classify a datagram into the window by the send time in its header, so the two window
//! counts cover exactly the same datagrams). Datagrams counted as [`UdpRecvReport::too_old`]
//! are not in `datagrams_received` (they may be late or duplicate; the window can no longer
//! tell), so with reordering deeper than the window, loss is over-estimated by at most
//! `too_old`.

use thiserror::Error;

pub use wirebench_model::side::Span;
pub use wirebench_model::udp::{UdpInvalidCounts, UdpRecvReport};

/// First four bytes of every UDP stream datagram.
pub const MAGIC: [u8; 4] = *b"WBU1";

/// Size of the datagram header: magic, flow id, sequence number, send time.
pub const HEADER_BYTES: usize = 24;

/// Largest UDP payload over IPv4 (65535 − 20 − 8); the largest datagram a flow may use.
pub const MAX_DATAGRAM_BYTES: usize = 65_507;

/// Default depth of the duplicate/late detection window, in sequence numbers (128 KiB of
/// bitmap per flow).
pub const DEFAULT_REORDER_WINDOW_SEQS: u64 = 1 << 20;

/// Smallest window [`SeqTracker::new`] uses (one bitmap word).
pub const MIN_REORDER_WINDOW_SEQS: u64 = 64;

/// Largest window [`SeqTracker::new`] uses (2 MiB of bitmap per flow).
pub const MAX_REORDER_WINDOW_SEQS: u64 = 1 << 24;

/// Why a buffer is not a datagram header (or cannot hold one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum HeaderError {
    /// The buffer is shorter than [`HEADER_BYTES`].
    #[error("datagram of {len_bytes} bytes is shorter than the {HEADER_BYTES}-byte header")]
    TooShort {
        /// The buffer's length.
        len_bytes: usize,
    },
    /// The first four bytes are not [`MAGIC`].
    #[error("datagram magic is {found:02x?}, not \"WBU1\"")]
    BadMagic {
        /// The four bytes found.
        found: [u8; 4],
    },
}

/// The fixed header at the start of every UDP stream datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DatagramHeader {
    /// Flow id (as in `TestSpec::flow_dirs`).
    pub flow: u32,
    /// Sequence number, from 0 per flow.
    pub seq: u64,
    /// Send time, ns after the sender's start instant (sender's monotonic clock).
    pub send_ns: u64,
}

impl DatagramHeader {
    /// Parse the header at the start of `buf`; whatever follows it is payload.
    pub fn parse(buf: &[u8]) -> Result<DatagramHeader, HeaderError> {
        let Some(h) = buf.first_chunk::<HEADER_BYTES>() else {
            return Err(HeaderError::TooShort {
                len_bytes: buf.len(),
            });
        };
        let [m0, m1, m2, m3, f0, f1, f2, f3, s0, s1, s2, s3, s4, s5, s6, s7, t0, t1, t2, t3, t4, t5, t6, t7] =
            *h;
        let magic = [m0, m1, m2, m3];
        if magic != MAGIC {
            return Err(HeaderError::BadMagic { found: magic });
        }
        Ok(DatagramHeader {
            flow: u32::from_be_bytes([f0, f1, f2, f3]),
            seq: u64::from_be_bytes([s0, s1, s2, s3, s4, s5, s6, s7]),
            send_ns: u64::from_be_bytes([t0, t1, t2, t3, t4, t5, t6, t7]),
        })
    }

    /// Parse the header and return it with the payload that follows it.
    pub fn split(buf: &[u8]) -> Result<(DatagramHeader, &[u8]), HeaderError> {
        let header = DatagramHeader::parse(buf)?;
        // parse succeeded, so buf holds at least HEADER_BYTES; `get` keeps this panic-free.
        Ok((header, buf.get(HEADER_BYTES..).unwrap_or_default()))
    }

    /// The header as its [`HEADER_BYTES`] wire bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_BYTES] {
        let [m0, m1, m2, m3] = MAGIC;
        let [f0, f1, f2, f3] = self.flow.to_be_bytes();
        let [s0, s1, s2, s3, s4, s5, s6, s7] = self.seq.to_be_bytes();
        let [t0, t1, t2, t3, t4, t5, t6, t7] = self.send_ns.to_be_bytes();
        [
            m0, m1, m2, m3, f0, f1, f2, f3, s0, s1, s2, s3, s4, s5, s6, s7, t0, t1, t2, t3, t4, t5,
            t6, t7,
        ]
    }

    /// Write the header over the first [`HEADER_BYTES`] of `buf`, leaving the rest alone.
    pub fn write(&self, buf: &mut [u8]) -> Result<(), HeaderError> {
        let len_bytes = buf.len();
        let Some(h) = buf.first_chunk_mut::<HEADER_BYTES>() else {
            return Err(HeaderError::TooShort { len_bytes });
        };
        *h = self.to_bytes();
        Ok(())
    }
}

/// What one datagram's sequence number says, relative to what the flow has seen so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SeqClass {
    /// Above every sequence number seen so far (the flow's first datagram included). Numbers
    /// it jumped over may still arrive, as [`SeqClass::Late`].
    InOrder,
    /// Below the highest seen, inside the window, and not seen before: reordered.
    Late,
    /// Inside the window and seen before (the highest included).
    Duplicate,
    /// At least a window's depth below the highest seen: the bitmap no longer covers it, so
    /// it cannot be told apart as late or duplicate. Not counted as received.
    TooOld,
}

/// How many datagrams [`SeqTracker`] put in each class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SeqCounts {
    /// [`SeqClass::InOrder`] datagrams.
    pub in_order: u64,
    /// [`SeqClass::Late`] datagrams.
    pub late: u64,
    /// [`SeqClass::Duplicate`] datagrams.
    pub duplicate: u64,
    /// [`SeqClass::TooOld`] datagrams.
    pub too_old: u64,
}

impl SeqCounts {
    /// Distinct sequence numbers received: in order + late.
    pub fn distinct(&self) -> u64 {
        self.in_order.saturating_add(self.late)
    }

    /// Every datagram fed.
    pub fn total(&self) -> u64 {
        self.distinct()
            .saturating_add(self.duplicate)
            .saturating_add(self.too_old)
    }
}

/// Per-flow sequence-number bookkeeping with a bounded sliding window.
///
/// The tracker remembers which of the `window` sequence numbers `highest − window + 1 ..=
/// highest` it has seen, in a ring bitmap of `window` bits (`window` a power of two, 64 to
/// 2^24; default 2^20 = 128 KiB). A sequence number is classified exactly:
///
/// - `seq > highest` (or nothing seen yet): [`SeqClass::InOrder`]; the window slides up and
///   the numbers it jumped over become "not seen".
/// - `highest − seq < window`: [`SeqClass::Duplicate`] if its bit is set, else
///   [`SeqClass::Late`] (and the bit is set).
/// - `highest − seq ≥ window`: [`SeqClass::TooOld`], counted separately and not remembered.
///
/// Memory is fixed at construction; each call does O(1) work plus clearing the bits the
/// window slides over (at most `window / 64` words). The tracker trusts the numbers it is
/// given: one forged datagram with a huge sequence number makes the flow's later genuine
/// datagrams `TooOld`.
#[derive(Debug, Clone)]
pub struct SeqTracker {
    bits: Vec<u64>,
    /// Window size, a power of two and a multiple of 64.
    window: u64,
    highest: Option<u64>,
    counts: SeqCounts,
}

impl SeqTracker {
    /// A tracker whose window covers `window_seqs` sequence numbers, rounded up to a power of
    /// two and clamped to [`MIN_REORDER_WINDOW_SEQS`]..=[`MAX_REORDER_WINDOW_SEQS`].
    pub fn new(window_seqs: u64) -> SeqTracker {
        let window = window_seqs
            .clamp(MIN_REORDER_WINDOW_SEQS, MAX_REORDER_WINDOW_SEQS)
            .next_power_of_two();
        SeqTracker {
            bits: vec![0; (window / 64) as usize],
            window,
            highest: None,
            counts: SeqCounts::default(),
        }
    }

    /// The window size actually in use, in sequence numbers.
    pub fn window_seqs(&self) -> u64 {
        self.window
    }

    /// The highest sequence number seen.
    pub fn highest(&self) -> Option<u64> {
        self.highest
    }

    /// Counts so far.
    pub fn counts(&self) -> SeqCounts {
        self.counts
    }

    /// Word index and bit mask of `seq`'s slot in the ring.
    fn slot(&self, seq: u64) -> (usize, u64) {
        let i = seq & (self.window - 1);
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    /// Clear `count` ring slots starting at ring index `from` (wrapping); `count <= window`.
    fn clear_ring(&mut self, from: u64, count: u64) {
        let mask = self.window - 1;
        let mut i = from & mask;
        let mut left = count;
        while left > 0 {
            let bit = i % 64;
            let n = (64 - bit).min(left);
            let m = if n == 64 {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << bit
            };
            if let Some(w) = self.bits.get_mut((i / 64) as usize) {
                *w &= !m;
            }
            // The window is a multiple of 64, so a run inside one word never wraps.
            i = (i + n) & mask;
            left -= n;
        }
    }

    /// Classify `seq` and remember it.
    pub fn feed(&mut self, seq: u64) -> SeqClass {
        let class = match self.highest {
            None => {
                self.highest = Some(seq);
                self.set(seq);
                SeqClass::InOrder
            }
            Some(h) if seq > h => {
                let advance = seq - h;
                if advance >= self.window {
                    self.bits.iter_mut().for_each(|w| *w = 0);
                } else {
                    // Slots of h+1 ..= seq held numbers that have now left the window.
                    self.clear_ring(h.wrapping_add(1), advance);
                }
                self.highest = Some(seq);
                self.set(seq);
                SeqClass::InOrder
            }
            Some(h) if h - seq >= self.window => SeqClass::TooOld,
            Some(_) => {
                let (word, m) = self.slot(seq);
                match self.bits.get_mut(word) {
                    Some(w) if *w & m != 0 => SeqClass::Duplicate,
                    Some(w) => {
                        *w |= m;
                        SeqClass::Late
                    }
                    // Unreachable: the bitmap has window / 64 words.
                    None => SeqClass::TooOld,
                }
            }
        };
        let c = &mut self.counts;
        let slot = match class {
            SeqClass::InOrder => &mut c.in_order,
            SeqClass::Late => &mut c.late,
            SeqClass::Duplicate => &mut c.duplicate,
            SeqClass::TooOld => &mut c.too_old,
        };
        *slot = slot.saturating_add(1);
        class
    }

    fn set(&mut self, seq: u64) {
        let (word, m) = self.slot(seq);
        if let Some(w) = self.bits.get_mut(word) {
            *w |= m;
        }
    }
}

/// RFC 3550 §6.4.1 interarrival jitter, in nanoseconds.
///
/// For consecutive datagrams i−1, i in arrival order, `D = (R_i − S_i) − (R_{i−1} − S_{i−1})`
/// (transit-time difference; R = arrival on the receiver's clock, S = send time from the
/// header on the sender's clock, so the offset between the clocks cancels) and
/// `J += (|D| − J) / 16`. Kept as `f64` ns, without the RFC's integer rounding.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct JitterEstimator {
    last_transit_ns: Option<i128>,
    jitter_ns: f64,
}

impl JitterEstimator {
    /// A fresh estimator (jitter 0).
    pub fn new() -> JitterEstimator {
        JitterEstimator::default()
    }

    /// Account one datagram: its send time (header) and arrival time (receiver clock).
    pub fn feed(&mut self, send_ns: u64, arrival_ns: u64) {
        let transit = i128::from(arrival_ns) - i128::from(send_ns);
        if let Some(last) = self.last_transit_ns {
            let d = (transit - last).unsigned_abs() as f64;
            self.jitter_ns += (d - self.jitter_ns) / 16.0;
        }
        self.last_transit_ns = Some(transit);
    }

    /// Current estimate, ns.
    pub fn jitter_ns(&self) -> f64 {
        self.jitter_ns
    }
}

/// Everything a receiver counts for one flow: sequence classes, bytes, window counts, jitter.
///
/// Pure bookkeeping: the caller parses the datagram and supplies its length and arrival time.
/// Only distinct datagrams (in order or late) count as received, add their bytes, count toward
/// the window and feed the jitter estimate; duplicates and too-old ones are only counted.
#[derive(Debug, Clone)]
pub struct FlowRecvAccounting {
    flow: u32,
    tracker: SeqTracker,
    jitter: JitterEstimator,
    window: Span,
    bytes_received: u64,
    window_datagrams: u64,
    window_bytes: u64,
    window_first_arrival_ns: Option<u64>,
    window_last_arrival_ns: Option<u64>,
}

impl FlowRecvAccounting {
    /// Accounting for `flow`, with a [`SeqTracker`] window of `reorder_window_seqs` and the
    /// sender's measurement window.
    pub fn new(flow: u32, reorder_window_seqs: u64, window: Span) -> FlowRecvAccounting {
        FlowRecvAccounting {
            flow,
            tracker: SeqTracker::new(reorder_window_seqs),
            jitter: JitterEstimator::new(),
            window,
            bytes_received: 0,
            window_datagrams: 0,
            window_bytes: 0,
            window_first_arrival_ns: None,
            window_last_arrival_ns: None,
        }
    }

    /// The flow id.
    pub fn flow(&self) -> u32 {
        self.flow
    }

    /// Account one datagram of `len_bytes` (the whole UDP payload, header included) that
    /// arrived at `arrival_ns` (receiver's clock). Returns `None`, counting nothing, if the
    /// header is for another flow.
    pub fn on_datagram(
        &mut self,
        header: &DatagramHeader,
        len_bytes: usize,
        arrival_ns: u64,
    ) -> Option<SeqClass> {
        if header.flow != self.flow {
            return None;
        }
        let class = self.tracker.feed(header.seq);
        if matches!(class, SeqClass::InOrder | SeqClass::Late) {
            let len = len_bytes as u64;
            self.bytes_received = self.bytes_received.saturating_add(len);
            self.jitter.feed(header.send_ns, arrival_ns);
            if self.window.contains(header.send_ns) {
                self.window_datagrams = self.window_datagrams.saturating_add(1);
                self.window_bytes = self.window_bytes.saturating_add(len);
                self.window_first_arrival_ns.get_or_insert(arrival_ns);
                self.window_last_arrival_ns = Some(arrival_ns);
            }
        }
        Some(class)
    }

    /// Sequence counts so far.
    pub fn counts(&self) -> SeqCounts {
        self.tracker.counts()
    }

    /// Bytes of the distinct datagrams so far.
    pub fn bytes_received(&self) -> u64 {
        self.bytes_received
    }

    /// Sequence numbers up to the highest seen that have not arrived (yet): `highest + 1 −
    /// distinct`, 0 before the first datagram. Late datagrams lower it.
    pub fn missing(&self) -> u64 {
        self.seq_end()
            .saturating_sub(self.tracker.counts().distinct())
    }

    /// The highest sequence number seen + 1 (0 before the first datagram).
    pub fn seq_end(&self) -> u64 {
        self.tracker.highest().map_or(0, |h| h.saturating_add(1))
    }

    /// The RFC 3550 jitter so far, ns.
    pub fn jitter_ns(&self) -> f64 {
        self.jitter.jitter_ns()
    }

    /// The report for this flow so far (`error` left empty).
    pub fn report(&self) -> UdpRecvReport {
        let c = self.tracker.counts();
        UdpRecvReport {
            flow: self.flow,
            datagrams_received: c.distinct(),
            bytes_received: self.bytes_received,
            window_datagrams_received: self.window_datagrams,
            window_bytes_received: self.window_bytes,
            sender_window: self.window,
            window_first_arrival_ns: self.window_first_arrival_ns,
            window_last_arrival_ns: self.window_last_arrival_ns,
            in_order: c.in_order,
            late: c.late,
            duplicate: c.duplicate,
            too_old: c.too_old,
            highest_seq: self.tracker.highest(),
            jitter_ns: self.jitter.jitter_ns(),
            reorder_window_seqs: self.tracker.window_seqs(),
            error: None,
            local: None,
            peer: None,
        }
    }
}

/// What [`RecvDemux::on_datagram`] made of one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DatagramOutcome {
    /// A datagram of a known flow: its index in the demux's flow list and its class.
    Accepted {
        /// Index of the flow in the list given to [`RecvDemux::new`].
        flow_index: usize,
        /// Its sequence class.
        class: SeqClass,
    },
    /// Shorter than the header.
    TooShort,
    /// The magic is wrong.
    BadMagic,
    /// A well-formed header with a flow id this socket does not serve.
    ForeignFlow(u32),
}

/// The receive side of one socket: routes datagrams to per-flow accounting by header flow id
/// and counts those that belong to no flow. Pure; the engine owns the socket.
#[derive(Debug, Clone)]
pub struct RecvDemux {
    /// (flow id, index into `flows`), sorted by flow id.
    index: Vec<(u32, usize)>,
    flows: Vec<FlowRecvAccounting>,
    invalid: UdpInvalidCounts,
}

impl RecvDemux {
    /// A demux for `flows` (in the order given; flow ids should be distinct — for a repeated
    /// id, the first entry gets every datagram).
    pub fn new(flows: Vec<FlowRecvAccounting>) -> RecvDemux {
        let mut index: Vec<(u32, usize)> = flows
            .iter()
            .enumerate()
            .map(|(i, f)| (f.flow(), i))
            .collect();
        index.sort_unstable();
        RecvDemux {
            index,
            flows,
            invalid: UdpInvalidCounts::default(),
        }
    }

    /// Account one received datagram (`buf` exactly the datagram) that arrived at
    /// `arrival_ns`. Never panics.
    pub fn on_datagram(&mut self, buf: &[u8], arrival_ns: u64) -> DatagramOutcome {
        self.on_parsed(DatagramHeader::parse(buf), buf.len(), arrival_ns)
    }

    /// Account one received datagram of `len_bytes` whose header the caller parsed itself
    /// (a datagram of another header format, mapped onto [`DatagramHeader`]); a parse error
    /// counts as [`RecvDemux::on_datagram`] counts it. Never panics.
    pub fn on_parsed(
        &mut self,
        parsed: Result<DatagramHeader, HeaderError>,
        len_bytes: usize,
        arrival_ns: u64,
    ) -> DatagramOutcome {
        let header = match parsed {
            Ok(h) => h,
            Err(HeaderError::TooShort { .. }) => {
                self.invalid.too_short = self.invalid.too_short.saturating_add(1);
                return DatagramOutcome::TooShort;
            }
            Err(HeaderError::BadMagic { .. }) => {
                self.invalid.bad_magic = self.invalid.bad_magic.saturating_add(1);
                return DatagramOutcome::BadMagic;
            }
        };
        let pos = self.index.partition_point(|&(f, _)| f < header.flow);
        let found = match self.index.get(pos) {
            Some(&(f, i)) if f == header.flow => Some(i),
            _ => None,
        };
        match found.and_then(|i| Some((i, self.flows.get_mut(i)?))) {
            Some((flow_index, acc)) => match acc.on_datagram(&header, len_bytes, arrival_ns) {
                Some(class) => DatagramOutcome::Accepted { flow_index, class },
                None => self.foreign(header.flow),
            },
            None => self.foreign(header.flow),
        }
    }

    /// Count a datagram that came from a source other than the test's peer, without looking
    /// at its content.
    pub fn on_foreign_source(&mut self) {
        self.invalid.foreign_source = self.invalid.foreign_source.saturating_add(1);
    }

    fn foreign(&mut self, flow: u32) -> DatagramOutcome {
        self.invalid.foreign_flow = self.invalid.foreign_flow.saturating_add(1);
        DatagramOutcome::ForeignFlow(flow)
    }

    /// The per-flow accounting, in the order given to [`RecvDemux::new`].
    pub fn flows(&self) -> &[FlowRecvAccounting] {
        &self.flows
    }

    /// The datagrams that belonged to no flow.
    pub fn invalid(&self) -> UdpInvalidCounts {
        self.invalid
    }

    /// Per-flow reports, in the order given to [`RecvDemux::new`].
    pub fn reports(&self) -> Vec<UdpRecvReport> {
        self.flows.iter().map(FlowRecvAccounting::report).collect()
    }
}

/// Fuzz target body: cut `data` into datagrams (each preceded by one length byte), run them
/// through a [`RecvDemux`] serving flows 0 and 1 with a small window, and check the
/// invariants: header round trip, every datagram counted exactly once, distinct + duplicate +
/// too-old = accepted. Must never panic on any input.
pub fn fuzz_datagrams(data: &[u8]) {
    let window = Span {
        start_ns: 1 << 20,
        end_ns: 1 << 40,
    };
    let mut demux = RecvDemux::new(vec![
        FlowRecvAccounting::new(0, MIN_REORDER_WINDOW_SEQS, window),
        FlowRecvAccounting::new(1, 128, window),
    ]);
    let mut rest = data;
    let mut fed: u64 = 0;
    let mut accepted: u64 = 0;
    let mut arrival_ns: u64 = 0;
    while let Some((&len, tail)) = rest.split_first() {
        let n = usize::from(len).min(tail.len());
        let (dgram, tail) = tail.split_at(n);
        rest = tail;
        if let Ok(h) = DatagramHeader::parse(dgram) {
            let mut again = [0u8; HEADER_BYTES];
            assert!(h.write(&mut again).is_ok());
            assert_eq!(DatagramHeader::parse(&again), Ok(h));
            assert_eq!(dgram.first_chunk::<HEADER_BYTES>(), Some(&again));
        }
        arrival_ns = arrival_ns.wrapping_add(u64::from(len) * 1000);
        fed += 1;
        if let DatagramOutcome::Accepted { .. } = demux.on_datagram(dgram, arrival_ns) {
            accepted += 1;
        }
    }
    let flows_total: u64 = demux.flows().iter().map(|f| f.counts().total()).sum();
    assert_eq!(flows_total, accepted);
    assert_eq!(accepted + demux.invalid().total(), fed);
    for r in demux.reports() {
        assert_eq!(r.datagrams_received, r.in_order + r.late);
        assert!(r.window_datagrams_received <= r.datagrams_received);
        assert!(r.jitter_ns.is_finite() && r.jitter_ns >= 0.0);
    }
}
