//! Parsing the records of a perf ring buffer (no `unsafe`, no I/O): the byte layout of
//! `PERF_RECORD_SAMPLE` for the sample type this sampler asks for, and `PERF_RECORD_LOST`.
//!
//! Records are parsed from a contiguous copy of one record (the ring reader copies a record
//! that wraps around the end of the buffer into one piece first). Everything is bounds
//! checked: a short or inconsistent record is reported as [`Record::Malformed`], never a
//! panic.

/// `PERF_RECORD_LOST`: the kernel dropped records because the ring was full.
pub const PERF_RECORD_LOST: u32 = 2;
/// `PERF_RECORD_THROTTLE`: the kernel throttled the event (too many samples per tick).
pub const PERF_RECORD_THROTTLE: u32 = 5;
/// `PERF_RECORD_SAMPLE`.
pub const PERF_RECORD_SAMPLE: u32 = 9;

/// `PERF_CONTEXT_KERNEL`: the call-chain entries that follow are kernel addresses.
pub const PERF_CONTEXT_KERNEL: u64 = (-128i64) as u64;
/// `PERF_CONTEXT_USER`: the call-chain entries that follow are user addresses.
pub const PERF_CONTEXT_USER: u64 = (-512i64) as u64;
/// Call-chain entries at or above this value are context markers, not addresses
/// (`PERF_CONTEXT_MAX` is -4095).
pub const PERF_CONTEXT_MAX: u64 = (-4095i64) as u64;

/// Size of `struct perf_event_header`.
pub const HEADER_BYTES: usize = 8;

/// One sample (`PERF_RECORD_SAMPLE` with `IP | TID | TIME | CPU | PERIOD | CALLCHAIN`),
/// borrowing its call chain from the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample<'a> {
    /// The instruction pointer at the sample.
    pub ip: u64,
    /// Process id (0 for the idle task and kernel-only contexts of CPU idle).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Time stamp, in the clock the event was opened with (`CLOCK_MONOTONIC` here), ns.
    pub time_ns: u64,
    /// The CPU the sample was taken on.
    pub cpu: u32,
    /// The sample's period: for `cpu-clock`, the ns of CPU time it stands for; for
    /// `cycles`, the cycles.
    pub period: u64,
    /// True if the sample interrupted kernel mode (the first call-chain context is the
    /// kernel's, or `misc` says so).
    pub kernel_mode: bool,
    /// The raw call chain: addresses with context markers (`PERF_CONTEXT_KERNEL`,
    /// `PERF_CONTEXT_USER`) between them, innermost first. Use [`Sample::frames`].
    pub callchain: &'a [u8],
}

/// One address of a call chain, with the side of the kernel/user boundary it is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// The instruction address.
    pub addr: u64,
    /// True for a kernel address.
    pub kernel: bool,
}

impl Sample<'_> {
    /// The call chain's frames, innermost first, without the context markers. Kernel
    /// frames come before user frames for a sample taken in kernel mode.
    pub fn frames(&self) -> impl Iterator<Item = Frame> + '_ {
        let mut kernel = self.kernel_mode;
        self.callchain.chunks_exact(8).filter_map(move |c| {
            let v = u64::from_ne_bytes(c.try_into().unwrap_or([0; 8]));
            if v >= PERF_CONTEXT_MAX {
                if v == PERF_CONTEXT_KERNEL {
                    kernel = true;
                } else if v == PERF_CONTEXT_USER {
                    kernel = false;
                }
                None
            } else {
                Some(Frame { addr: v, kernel })
            }
        })
    }
}

/// A parsed record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record<'a> {
    /// A sample.
    Sample(Sample<'a>),
    /// The kernel lost this many records (ring full).
    Lost {
        /// Records lost.
        lost: u64,
    },
    /// The kernel throttled the event once.
    Throttle,
    /// Any other record type (ignored).
    Other {
        /// `perf_event_header.type`.
        kind: u32,
    },
    /// A record too short for its type.
    Malformed,
}

/// `perf_event_header.misc` bits for the sample's CPU mode.
const PERF_RECORD_MISC_CPUMODE_MASK: u16 = 7;
/// `PERF_RECORD_MISC_KERNEL`.
const PERF_RECORD_MISC_KERNEL: u16 = 1;

/// A bounds-checked little cursor over a record's bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn u64(&mut self) -> Option<u64> {
        let b = self.bytes.get(self.at..self.at + 8)?;
        self.at += 8;
        Some(u64::from_ne_bytes(b.try_into().ok()?))
    }

    fn u32_pair(&mut self) -> Option<(u32, u32)> {
        let v = self.u64()?.to_ne_bytes();
        let a = u32::from_ne_bytes(v[0..4].try_into().ok()?);
        let b = u32::from_ne_bytes(v[4..8].try_into().ok()?);
        Some((a, b))
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let b = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(b)
    }
}

/// Reads `perf_event_header` (type, misc, size) from the first 8 bytes.
pub fn header(bytes: &[u8]) -> Option<(u32, u16, u16)> {
    let h = bytes.get(..HEADER_BYTES)?;
    let kind = u32::from_ne_bytes(h[0..4].try_into().ok()?);
    let misc = u16::from_ne_bytes(h[4..6].try_into().ok()?);
    let size = u16::from_ne_bytes(h[6..8].try_into().ok()?);
    Some((kind, misc, size))
}

/// Parses one whole record (header included); `record.len()` is the header's size.
pub fn parse(record: &[u8]) -> Record<'_> {
    let Some((kind, misc, _)) = header(record) else {
        return Record::Malformed;
    };
    let body = &record[HEADER_BYTES..];
    match kind {
        PERF_RECORD_SAMPLE => parse_sample(misc, body).map_or(Record::Malformed, Record::Sample),
        PERF_RECORD_LOST => {
            let mut c = Cursor { bytes: body, at: 0 };
            match (c.u64(), c.u64()) {
                (Some(_id), Some(lost)) => Record::Lost { lost },
                _ => Record::Malformed,
            }
        }
        PERF_RECORD_THROTTLE => Record::Throttle,
        other => Record::Other { kind: other },
    }
}

/// The body of a sample for `IP | TID | TIME | CPU | PERIOD | CALLCHAIN`, in the kernel's
/// order: ip; pid, tid; time; cpu, res; period; nr, ips[nr].
fn parse_sample(misc: u16, body: &[u8]) -> Option<Sample<'_>> {
    let mut c = Cursor { bytes: body, at: 0 };
    let ip = c.u64()?;
    let (pid, tid) = c.u32_pair()?;
    let time_ns = c.u64()?;
    let (cpu, _res) = c.u32_pair()?;
    let period = c.u64()?;
    let nr = usize::try_from(c.u64()?).ok()?;
    let callchain = c.take(nr.checked_mul(8)?)?;
    let kernel_mode = misc & PERF_RECORD_MISC_CPUMODE_MASK == PERF_RECORD_MISC_KERNEL;
    Some(Sample {
        ip,
        pid,
        tid,
        time_ns,
        cpu,
        period,
        kernel_mode,
        callchain,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a sample record as the kernel lays it out.
    pub(crate) fn sample_bytes(misc: u16, ip: u64, pid: u32, cpu: u32, chain: &[u64]) -> Vec<u8> {
        let mut b = Vec::new();
        let size = HEADER_BYTES + 8 * 6 + 8 * chain.len();
        b.extend_from_slice(&PERF_RECORD_SAMPLE.to_ne_bytes());
        b.extend_from_slice(&misc.to_ne_bytes());
        b.extend_from_slice(&(size as u16).to_ne_bytes());
        b.extend_from_slice(&ip.to_ne_bytes());
        b.extend_from_slice(&pid.to_ne_bytes());
        b.extend_from_slice(&(pid + 1).to_ne_bytes());
        b.extend_from_slice(&123_456u64.to_ne_bytes());
        b.extend_from_slice(&cpu.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        b.extend_from_slice(&250_000u64.to_ne_bytes());
        b.extend_from_slice(&(chain.len() as u64).to_ne_bytes());
        for a in chain {
            b.extend_from_slice(&a.to_ne_bytes());
        }
        assert_eq!(b.len(), size);
        b
    }

    #[test]
    fn sample_fields_and_frames() {
        let chain = [
            PERF_CONTEXT_KERNEL,
            0xffff_ffff_8100_0010,
            0xffff_ffff_8100_0020,
            PERF_CONTEXT_USER,
            0x5555_0000_1000,
        ];
        let b = sample_bytes(
            PERF_RECORD_MISC_KERNEL,
            0xffff_ffff_8100_0010,
            42,
            1,
            &chain,
        );
        let Record::Sample(s) = parse(&b) else {
            panic!("not a sample")
        };
        assert_eq!(
            (s.ip, s.pid, s.tid, s.cpu),
            (0xffff_ffff_8100_0010, 42, 43, 1)
        );
        assert_eq!((s.time_ns, s.period), (123_456, 250_000));
        assert!(s.kernel_mode);
        let frames: Vec<Frame> = s.frames().collect();
        assert_eq!(frames.len(), 3);
        assert!(frames[0].kernel && frames[1].kernel && !frames[2].kernel);
        assert_eq!(frames[2].addr, 0x5555_0000_1000);
    }

    #[test]
    fn truncated_records_are_malformed_not_panics() {
        let b = sample_bytes(2, 0x1000, 7, 0, &[PERF_CONTEXT_USER, 0x1000, 0x2000]);
        for cut in 0..b.len() {
            let r = parse(&b[..cut]);
            assert!(matches!(r, Record::Malformed), "cut at {cut}: {r:?}");
        }
        // A call-chain length beyond the record.
        let mut bad = b.clone();
        let nr_at = HEADER_BYTES + 8 * 5;
        bad[nr_at..nr_at + 8].copy_from_slice(&u64::MAX.to_ne_bytes());
        assert_eq!(parse(&bad), Record::Malformed);
    }

    #[test]
    fn lost_and_other_records() {
        let mut b = Vec::new();
        b.extend_from_slice(&PERF_RECORD_LOST.to_ne_bytes());
        b.extend_from_slice(&0u16.to_ne_bytes());
        b.extend_from_slice(&24u16.to_ne_bytes());
        b.extend_from_slice(&9u64.to_ne_bytes());
        b.extend_from_slice(&17u64.to_ne_bytes());
        assert_eq!(parse(&b), Record::Lost { lost: 17 });
        b[0..4].copy_from_slice(&3u32.to_ne_bytes());
        assert_eq!(parse(&b), Record::Other { kind: 3 });
    }
}
