//! The send and receive paths of the stream workload, over the kernel primitives of
//! [`wirebench_sys::datapath`], and the payload they carry.
//!
//! # Payload
//!
//! The stream of every flow is one block of [`PAYLOAD_BLOCK_BYTES`] pseudo-random bytes
//! repeated: stream byte `i` is `block[i % PAYLOAD_BLOCK_BYTES]`, whatever the path and
//! however the writes are cut. Without verification the block is random (`fill_random`);
//! with `verify` both ends derive it from [`PAYLOAD_SEED`] (SplitMix64), so the receiver can
//! check every byte it gets against `block[offset % len]` without any exchange. Either way
//! it is incompressible. The block never changes during a run, which is what the paths that
//! keep referencing user pages after a call returns (vmsplice, `MSG_ZEROCOPY`, `SEND_ZC`)
//! need for the bytes on the wire to be the bytes counted.
//!
//! # Call sizes
//!
//! Every path moves at most `msg_size_bytes` (or the paced chunk) per call, except where the
//! primitive has a smaller unit: `splice` at most one pipe-full (1 MiB) per call, io_uring
//! at most one payload block (1 MiB) per send operation, with up to four operations in
//! flight as one linked chain when unpaced and one when paced. `MSG_ZEROCOPY` keeps at most
//! 256 sends outstanding and waits for completions at that cap.
//!
//! # Setup and fallback
//!
//! Each flow sets its path up on its own socket. If the setup fails (the kernel lacks the
//! feature, which the primitives report as `ErrorKind::Unsupported`, or anything else goes
//! wrong before the first byte), the flow uses the copy path and records why; the engine
//! turns that into a warning. [`DISABLE_PATHS_ENV`] makes chosen paths fail their setup on
//! purpose, to exercise the fallback.

use std::io::{self, Read, Write};

use crate::stream::flowside::PathReport;
use std::net::TcpStream;
use std::time::Duration;

use crate::buffers;
use wirebench_model::side::{PathUsed, ZeroCopyStats};
use wirebench_model::spec::{RecvPath, SendPath};
use wirebench_model::warning::{FallbackReason, FlowError, OsError, Step};
use wirebench_sys::datapath::{
    enable_zerocopy, fill_random, recv_discard, sendfile, MemFile, SpliceDiscard, SpliceSender,
    UringReceiver, UringSendOp, UringSender, ZeroCopyCompletions, ZeroCopyReceiver,
    DEFAULT_PIPE_SIZE, DEFAULT_ZC_CHUNK,
};
use wirebench_sys::mem::PlacedBuf;

/// Length of the payload block whose repetition is every flow's stream, bytes.
pub const PAYLOAD_BLOCK_BYTES: usize = 1 << 20;

/// Seed of the payload block when verifying (both ends use it).
pub const PAYLOAD_SEED: u64 = 0x7769_7265_6265_6e63;

/// Test and diagnostic knob: a comma-separated list of paths whose setup fails as
/// unsupported, so that the flow falls back to copy (e.g. `zerocopy,uring`). A plain name
/// disables the path on both the send and the receive side; `send:NAME` or `recv:NAME` only
/// one side (`uring_zc` is the io_uring `SEND_ZC` send path).
/// Read once when a stream run starts, at each end.
pub const DISABLE_PATHS_ENV: &str = "WIREBENCH_DISABLE_PATHS";

/// Most `MSG_ZEROCOPY` sends a flow keeps outstanding; at the cap the sender waits for
/// completions before the next send.
const ZC_MAX_OUTSTANDING: u64 = 256;
/// Outstanding `MSG_ZEROCOPY` sends above which completions are collected (without waiting)
/// before each send.
const ZC_POLL_AT: u64 = 64;
/// io_uring sends per linked chain.
const URING_DEPTH: u32 = 4;
/// Target size of an io_uring receiver's buffer pool, bytes.
const URING_POOL_BYTES: usize = 4 << 20;

/// The paths disabled by [`DISABLE_PATHS_ENV`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Disabled {
    names: Vec<String>,
}

impl Disabled {
    /// Reads [`DISABLE_PATHS_ENV`].
    pub(crate) fn from_env() -> Disabled {
        Disabled::parse(&std::env::var(DISABLE_PATHS_ENV).unwrap_or_default())
    }

    fn parse(list: &str) -> Disabled {
        Disabled {
            names: list
                .split(',')
                .map(|s| s.trim().to_ascii_lowercase())
                .filter(|s| !s.is_empty())
                .collect(),
        }
    }

    fn has(&self, side: &str, name: &str) -> bool {
        self.names.iter().any(|n| {
            n == name || n.strip_prefix(side).and_then(|r| r.strip_prefix(':')) == Some(name)
        })
    }

    fn check(&self, side: &str, name: &str) -> Result<(), FallbackReason> {
        if self.has(side, name) {
            return Err(FallbackReason::DisabledByEnv);
        }
        Ok(())
    }
}

/// One SplitMix64 step.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The payload block derived from `seed`.
fn seeded_block(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        v.extend_from_slice(&splitmix64(&mut state).to_le_bytes());
    }
    v.truncate(len);
    v
}

/// The payload of a run: the block, laid out repeated so that any window of up to
/// `msg` bytes starting inside the first block is one contiguous slice.
#[derive(Debug)]
pub(crate) struct Payload {
    bytes: PlacedBuf,
}

impl Payload {
    /// The payload for messages of up to `msg` bytes, starting `offset` bytes past a page
    /// boundary; the seeded block if `seeded`, else a random one.
    pub(crate) fn new(msg: usize, seeded: bool, offset: usize) -> Payload {
        let copies = 1 + msg.max(1).div_ceil(PAYLOAD_BLOCK_BYTES);
        let mut bytes = buffers::zeroed(copies * PAYLOAD_BLOCK_BYTES, offset);
        let (block, rest) = bytes.split_at_mut(PAYLOAD_BLOCK_BYTES);
        if seeded {
            block.copy_from_slice(&seeded_block(PAYLOAD_SEED, PAYLOAD_BLOCK_BYTES));
        } else {
            fill_random(block);
        }
        for copy in rest.chunks_exact_mut(PAYLOAD_BLOCK_BYTES) {
            copy.copy_from_slice(block);
        }
        Payload { bytes }
    }

    /// Bytes from the page boundary before the payload to its first byte.
    #[cfg(test)]
    pub(crate) fn offset(&self) -> usize {
        self.bytes.offset()
    }

    /// The block whose repetition is the stream.
    pub(crate) fn block(&self) -> &[u8] {
        &self.bytes[..PAYLOAD_BLOCK_BYTES]
    }

    /// Everything: the block repeated (the content of the `sendfile` source).
    fn all(&self) -> &[u8] {
        &self.bytes
    }

    /// Offset inside the block of stream byte `offset`.
    fn block_offset(offset: u64) -> usize {
        (offset % PAYLOAD_BLOCK_BYTES as u64) as usize
    }

    /// Stream bytes `offset .. offset + len` (`len` at most the message size given to
    /// [`Payload::new`]).
    pub(crate) fn window(&self, offset: u64, len: usize) -> &[u8] {
        let start = Self::block_offset(offset);
        &self.bytes[start..start + len]
    }
}

/// Checks received bytes against the payload, in stream order.
#[derive(Debug)]
pub(crate) struct Verifier<'a> {
    block: &'a [u8],
    offset: u64,
    errors: u64,
    first_error: Option<u64>,
}

impl<'a> Verifier<'a> {
    /// A verifier at stream offset 0.
    pub(crate) fn new(block: &'a [u8]) -> Verifier<'a> {
        Verifier {
            block,
            offset: 0,
            errors: 0,
            first_error: None,
        }
    }

    /// Checks the next received bytes.
    pub(crate) fn check(&mut self, mut data: &[u8]) {
        let len = self.block.len();
        while !data.is_empty() {
            let start = (self.offset % len as u64) as usize;
            let n = data.len().min(len - start);
            let (got, want) = (&data[..n], &self.block[start..start + n]);
            if got != want {
                let mut bad = got
                    .iter()
                    .zip(want)
                    .enumerate()
                    .filter(|(_, (a, b))| a != b);
                if let Some((i, _)) = bad.next() {
                    self.first_error.get_or_insert(self.offset + i as u64);
                    self.errors += 1 + bad.count() as u64;
                }
            }
            self.offset += n as u64;
            data = &data[n..];
        }
    }

    /// Bytes checked.
    pub(crate) fn verified_bytes(&self) -> u64 {
        self.offset
    }

    /// Bytes that differed.
    pub(crate) fn errors(&self) -> u64 {
        self.errors
    }

    /// Stream offset of the first differing byte.
    pub(crate) fn first_error(&self) -> Option<u64> {
        self.first_error
    }
}

/// Shared setup of the send paths: built once per run, used by every sending flow.
#[derive(Debug)]
pub(crate) struct SendShared {
    /// The `sendfile` source (the payload repeated), or why it could not be made.
    memfile: Option<Result<MemFile, FallbackReason>>,
}

impl SendShared {
    /// Prepares what `path` shares between flows (nothing unless it is `sendfile` and there
    /// are senders).
    pub(crate) fn new(path: SendPath, payload: &Payload, senders: bool, off: &Disabled) -> Self {
        let memfile = (path == SendPath::Sendfile && senders).then(|| {
            off.check("send", SendPath::Sendfile.as_str())
                .and_then(|()| {
                    MemFile::page_cache_from_bytes(payload.all(), &std::env::temp_dir())
                        .map_err(|e| setup_failed(&e))
                })
        });
        SendShared { memfile }
    }
}

/// A sending flow's path, set up on its socket.
pub(crate) enum Sender<'a> {
    /// `write(2)`.
    Copy,
    /// `sendfile(2)` from the shared memory file.
    Sendfile(&'a MemFile),
    /// vmsplice + splice.
    Splice(SpliceSender),
    /// `send(MSG_ZEROCOPY)` with completion tracking.
    Zerocopy(ZeroCopyCompletions),
    /// io_uring sends (boxed: the ring is large).
    Uring(Box<UringSender>),
}

impl<'a> Sender<'a> {
    /// Sets `path` up on `s`; on failure, the copy path and the reason.
    pub(crate) fn setup(
        path: SendPath,
        s: &TcpStream,
        payload: &Payload,
        msg: usize,
        shared: &'a SendShared,
        off: &Disabled,
    ) -> (Sender<'a>, Option<FallbackReason>) {
        let setup = || -> io::Result<Sender<'a>> {
            match path {
                SendPath::Copy => Ok(Sender::Copy),
                SendPath::Sendfile => unreachable!("sendfile is set up from the shared source"),
                SendPath::Splice => SpliceSender::new(DEFAULT_PIPE_SIZE).map(Sender::Splice),
                SendPath::Zerocopy => {
                    enable_zerocopy(s).map(|()| Sender::Zerocopy(ZeroCopyCompletions::new()))
                }
                SendPath::Uring | SendPath::UringZc => {
                    let mut tx = UringSender::new(s, PAYLOAD_BLOCK_BYTES, URING_DEPTH)?;
                    tx.set_buffer(payload.block())?;
                    tx.set_max_send_len(msg);
                    if path == SendPath::UringZc {
                        // `Unsupported` (so copy, with the reason) if the kernel lacks SEND_ZC.
                        tx.set_op(UringSendOp::SendZc)?;
                    }
                    Ok(Sender::Uring(Box::new(tx)))
                }
            }
        };
        let res = off
            .check("send", path.as_str())
            .and_then(|()| match (path, &shared.memfile) {
                (SendPath::Sendfile, Some(Ok(f))) => Ok(Sender::Sendfile(f)),
                (SendPath::Sendfile, Some(Err(why))) => Err(why.clone()),
                (SendPath::Sendfile, None) => {
                    Err(setup_failed(&io::Error::other("no sendfile source")))
                }
                _ => setup().map_err(|e| setup_failed(&e)),
            });
        match res {
            Ok(tx) => (tx, None),
            Err(why) => (Sender::Copy, Some(why)),
        }
    }

    /// Sends up to `len` stream bytes starting at stream offset `offset` (the bytes sent so
    /// far); returns the bytes the kernel accepted (or, for io_uring, that completed: 0 is
    /// possible and not an error). `timeout` bounds waits that the socket timeouts do not.
    ///
    /// `queue_limit` bounds what io_uring, which queues several sends at once, may queue (see
    /// [`Sender::queue_limit`]).
    pub(crate) fn send(
        &mut self,
        s: &TcpStream,
        payload: &Payload,
        offset: u64,
        len: usize,
        queue_limit: u64,
        timeout: Duration,
    ) -> io::Result<usize> {
        let n = match self {
            Sender::Copy => (&*s).write(payload.window(offset, len))?,
            Sender::Sendfile(f) => sendfile(s, f, Payload::block_offset(offset) as u64, len)?,
            Sender::Splice(tx) => tx.send(s, payload.window(offset, len))?,
            Sender::Zerocopy(zc) => {
                return zerocopy_send(zc, s, payload.window(offset, len), timeout)
            }
            Sender::Uring(tx) => return tx.send(queue_limit, timeout),
        };
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "peer stopped accepting data (send returned 0)",
            ));
        }
        Ok(n)
    }

    /// The most bytes a sender of `len`-byte calls may queue at once: one call when `paced`
    /// (the pacer decides when the next one goes), else [`URING_DEPTH`] calls; never more
    /// than `left`, what the flow may still send in all (its byte budget).
    pub(crate) fn queue_limit(len: usize, paced: bool, left: u64) -> u64 {
        let calls = if paced { 1 } else { u64::from(URING_DEPTH) };
        (len as u64).saturating_mul(calls).min(left)
    }

    /// After the last send: waits (up to `timeout`) for sends still in flight and for
    /// zero-copy completions. Returns the bytes that completed meanwhile (io_uring) and an
    /// error if the wait failed.
    pub(crate) fn finish(&mut self, s: &TcpStream, timeout: Duration) -> (u64, Option<FlowError>) {
        match self {
            Sender::Zerocopy(zc) => match zc.wait_all(s, timeout) {
                Ok(()) => (0, None),
                Err(e) => (0, Some(FlowError::os(Step::ZerocopyCompletions, &e))),
            },
            Sender::Uring(tx) => {
                let before = tx.stats().bytes;
                let res = tx.finish(timeout);
                let extra = tx.stats().bytes - before;
                (extra, res.err().map(|e| FlowError::os(Step::UringSend, &e)))
            }
            _ => (0, None),
        }
    }

    /// The path used and its accounting.
    pub(crate) fn report(&self) -> PathReport {
        let (path, zerocopy) = match self {
            Sender::Copy => (SendPath::Copy, None),
            Sender::Sendfile(_) => (SendPath::Sendfile, None),
            Sender::Splice(_) => (SendPath::Splice, None),
            Sender::Zerocopy(zc) => (
                SendPath::Zerocopy,
                Some(ZeroCopyStats {
                    sends: zc.sent(),
                    sends_completed_zerocopy: zc.completed_zerocopy(),
                    sends_completed_copied: zc.completed_copied(),
                    ..ZeroCopyStats::default()
                }),
            ),
            Sender::Uring(tx) => {
                let st = tx.stats();
                let zc = (tx.op() == UringSendOp::SendZc).then(|| ZeroCopyStats {
                    sends: st.completions,
                    sends_completed_zerocopy: st.zc_notifications.saturating_sub(st.zc_copied),
                    sends_completed_copied: st.zc_copied,
                    ..ZeroCopyStats::default()
                });
                let path = if zc.is_some() {
                    SendPath::UringZc
                } else {
                    SendPath::Uring
                };
                (path, zc)
            }
        };
        PathReport {
            path: PathUsed::Send(path),
            fallback: None,
            zerocopy,
        }
    }
}

/// One `MSG_ZEROCOPY` send with the outstanding sends bounded: collect completions when
/// many are outstanding, wait for one at the cap (and when the kernel runs out of
/// notification memory, `ENOBUFS`).
fn zerocopy_send(
    zc: &mut ZeroCopyCompletions,
    s: &TcpStream,
    buf: &[u8],
    timeout: Duration,
) -> io::Result<usize> {
    if zc.outstanding() >= ZC_POLL_AT {
        zc.poll(s)?;
    }
    if zc.outstanding() >= ZC_MAX_OUTSTANDING {
        zc.wait(s, timeout)?;
        if zc.outstanding() >= ZC_MAX_OUTSTANDING {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "waiting for MSG_ZEROCOPY completions",
            ));
        }
    }
    match zc.send(s, buf) {
        Ok(0) => Err(io::Error::new(
            io::ErrorKind::WriteZero,
            "peer stopped accepting data (send returned 0)",
        )),
        Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
            zc.wait(s, timeout)?;
            Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "MSG_ZEROCOPY: out of notification memory",
            ))
        }
        other => other,
    }
}

/// A receiving flow's path, set up on its socket.
pub(crate) enum Receiver {
    /// `read(2)`.
    Copy,
    /// `recv(MSG_TRUNC)`.
    Discard,
    /// splice to `/dev/null`.
    Splice(SpliceDiscard),
    /// `TCP_ZEROCOPY_RECEIVE`, with the bytes mapped and copied so far (boxed: large).
    Zerocopy(Box<ZeroCopyReceiver>, ZeroCopyStats),
    /// io_uring receives (boxed: the ring is large).
    Uring(Box<UringReceiver>),
}

impl Receiver {
    /// Sets `path` up on `s`; on failure, the copy path and the reason.
    pub(crate) fn setup(
        path: RecvPath,
        s: &TcpStream,
        msg: usize,
        off: &Disabled,
    ) -> (Receiver, Option<FallbackReason>) {
        let setup = || match path {
            RecvPath::Copy => Ok(Receiver::Copy),
            RecvPath::Discard => Ok(Receiver::Discard),
            RecvPath::Splice => SpliceDiscard::new(DEFAULT_PIPE_SIZE).map(Receiver::Splice),
            RecvPath::Zerocopy => ZeroCopyReceiver::new(s, DEFAULT_ZC_CHUNK)
                .map(|rx| Receiver::Zerocopy(Box::new(rx), ZeroCopyStats::default())),
            RecvPath::Uring => {
                let nbufs = (URING_POOL_BYTES / msg.max(1)).clamp(2, 32);
                UringReceiver::new(s, msg.max(1), nbufs).map(|rx| Receiver::Uring(Box::new(rx)))
            }
        };
        let res = off
            .check("recv", path.as_str())
            .and_then(|()| setup().map_err(|e| setup_failed(&e)));
        match res {
            Ok(rx) => (rx, None),
            Err(why) => (Receiver::Copy, Some(why)),
        }
    }

    /// Receives the next bytes (up to `buf.len()` for the copy-like paths); 0 means end of
    /// stream. The bytes go through `verify` when the path delivers them.
    pub(crate) fn recv(
        &mut self,
        s: &TcpStream,
        buf: &mut [u8],
        verify: Option<&mut Verifier<'_>>,
        timeout: Duration,
    ) -> io::Result<usize> {
        match self {
            Receiver::Copy => {
                let n = (&*s).read(buf)?;
                if let Some(v) = verify {
                    v.check(&buf[..n]);
                }
                Ok(n)
            }
            Receiver::Discard => recv_discard(s, buf.len()),
            Receiver::Splice(rx) => rx.recv(s, buf.len()),
            Receiver::Zerocopy(rx, st) => {
                let r = rx.recv(s, buf)?;
                st.bytes_mapped += r.mapped_bytes as u64;
                st.bytes_copied += r.copied_bytes as u64;
                if let Some(v) = verify {
                    v.check(rx.mapped());
                    v.check(&buf[..r.copied_bytes]);
                }
                Ok(r.mapped_bytes + r.copied_bytes)
            }
            Receiver::Uring(rx) => {
                let n = rx.recv(timeout)?;
                if let Some(v) = verify {
                    v.check(rx.data());
                }
                Ok(n)
            }
        }
    }

    /// The path in use.
    pub(crate) fn path(&self) -> RecvPath {
        match self {
            Receiver::Copy => RecvPath::Copy,
            Receiver::Discard => RecvPath::Discard,
            Receiver::Splice(_) => RecvPath::Splice,
            Receiver::Zerocopy(..) => RecvPath::Zerocopy,
            Receiver::Uring(_) => RecvPath::Uring,
        }
    }

    /// The path used and its accounting.
    pub(crate) fn report(&self) -> PathReport {
        let zerocopy = match self {
            Receiver::Zerocopy(_, st) => Some(st.clone()),
            _ => None,
        };
        PathReport {
            path: PathUsed::Recv(self.path()),
            fallback: None,
            zerocopy,
        }
    }
}

/// The fallback reason of a setup that failed with `e`.
fn setup_failed(e: &io::Error) -> FallbackReason {
    FallbackReason::SetupFailed {
        error: OsError::from(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_the_block_repeated() {
        for msg in [1, 4096, PAYLOAD_BLOCK_BYTES - 1, PAYLOAD_BLOCK_BYTES + 3] {
            let p = Payload::new(msg, true, 0);
            let block = p.block().to_vec();
            for offset in [
                0u64,
                17,
                PAYLOAD_BLOCK_BYTES as u64 - 1,
                5 * PAYLOAD_BLOCK_BYTES as u64 + 9,
            ] {
                let w = p.window(offset, msg);
                assert_eq!(w.len(), msg);
                for (i, &b) in w.iter().enumerate().step_by(997) {
                    let at = (offset + i as u64) % PAYLOAD_BLOCK_BYTES as u64;
                    assert_eq!(b, block[at as usize]);
                }
            }
        }
    }

    #[test]
    fn the_payload_starts_at_the_run_buffer_offset() {
        for offset in [0, 16, 2048, 4095] {
            let p = Payload::new(96 << 10, false, offset);
            assert_eq!(p.offset(), offset);
            assert_eq!(p.window(0, 10).as_ptr() as usize % 4096, offset);
        }
    }

    #[test]
    fn seeded_block_is_fixed_and_random_looking() {
        let a = Payload::new(10, true, 0);
        let b = Payload::new(1 << 20, true, 16);
        assert_eq!(a.block(), b.block());
        let mut counts = [0u32; 256];
        for &x in a.block() {
            counts[usize::from(x)] += 1;
        }
        // ~4096 each; a wildly uneven histogram would mean a broken generator.
        assert!(
            counts.iter().all(|&c| (3500..4700).contains(&c)),
            "{counts:?}"
        );
        assert_ne!(Payload::new(10, false, 0).block(), a.block());
    }

    #[test]
    fn verifier_counts_and_locates_mismatches() {
        let p = Payload::new(64, true, 0);
        let mut v = Verifier::new(p.block());
        // Cut across the block boundary in odd pieces.
        let mut stream = Vec::new();
        for off in (0..(2 * PAYLOAD_BLOCK_BYTES as u64 + 100)).step_by(64) {
            stream.extend_from_slice(p.window(off, 64));
        }
        for chunk in stream.chunks(7777) {
            v.check(chunk);
        }
        assert_eq!(v.errors(), 0);
        assert_eq!(v.verified_bytes(), stream.len() as u64);
        let mut w = Verifier::new(p.block());
        stream[PAYLOAD_BLOCK_BYTES + 5] ^= 1;
        stream[PAYLOAD_BLOCK_BYTES + 9] ^= 0xff;
        w.check(&stream);
        assert_eq!(w.errors(), 2);
        assert_eq!(w.first_error(), Some(PAYLOAD_BLOCK_BYTES as u64 + 5));
    }

    #[test]
    fn disabled_list_parses_sides() {
        let d = Disabled::parse(" zerocopy, recv:uring ,send:splice,");
        assert!(d.has("send", "zerocopy") && d.has("recv", "zerocopy"));
        assert!(d.has("recv", "uring") && !d.has("send", "uring"));
        assert!(d.has("send", "splice") && !d.has("recv", "splice"));
        assert!(!d.has("send", "copy"));
        assert!(d.check("send", "zerocopy").is_err());
        assert!(Disabled::parse("").names.is_empty());
    }
}
