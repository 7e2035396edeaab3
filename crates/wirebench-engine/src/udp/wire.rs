//! The header format of a UDP test's datagrams: wirebench's own, or iperf3's (so that the
//! engine can be the far end of a stock iperf3 client).
//!
//! Both map onto [`DatagramHeader`] (flow, sequence number from 0, send time in ns), so the
//! receiver's bookkeeping is the same for both:
//!
//! - iperf3's header has no flow id: a socket receiving iperf3 datagrams serves exactly one
//!   flow, and every datagram on it is that flow's.
//! - iperf3 numbers datagrams from 1: number `n` is the engine's `n − 1`. A datagram
//!   numbered 0 is not a header of the test's format and is counted as `bad_magic`.
//! - iperf3's send time is the sender's clock in seconds and microseconds; only differences
//!   between send times are used (jitter), so this engine writes its own send time (ns after
//!   its start, truncated to µs) there. Received, the sender's clock is not the engine's, so
//!   a receiver of iperf3 datagrams counts every datagram in its window (the caller runs
//!   such tests without warm-up).

use std::time::Duration;

use wirebench_iperf3::udp::{UdpHeader, HEADER_BYTES_32, HEADER_BYTES_64};
use wirebench_proto::udp::{DatagramHeader, HeaderError, HEADER_BYTES};

/// The header format of a UDP test's datagrams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UdpWire {
    /// wirebench's header ([`wirebench_proto::udp`]).
    #[default]
    Native,
    /// iperf3's header: send time, then a 32-bit (or, with `counters_64bit`, 64-bit)
    /// sequence number from 1.
    Iperf3 {
        /// iperf3's `--udp-counters-64bit`.
        counters_64bit: bool,
    },
}

impl UdpWire {
    /// Bytes of the header; a datagram must be at least this long.
    pub fn header_bytes(self) -> usize {
        match self {
            UdpWire::Native => HEADER_BYTES,
            UdpWire::Iperf3 {
                counters_64bit: false,
            } => HEADER_BYTES_32,
            UdpWire::Iperf3 {
                counters_64bit: true,
            } => HEADER_BYTES_64,
        }
    }

    /// How a paced sender waits and catches up: the spin before each datagram is due, and
    /// how many gaps late it may be before it drops the overdue slots (a pacing reset).
    /// wirebench's own: a short spin and [`super::MAX_CATCH_UP_DATAGRAMS`] (bounded bursts).
    /// iperf3's: no spin and no limit, as iperf3's sender, whose `-b` is the rate averaged
    /// from the start (a late sender catches up in full).
    pub(super) fn pacing(self) -> (Duration, u64) {
        match self {
            UdpWire::Native => (super::SPIN, super::MAX_CATCH_UP_DATAGRAMS),
            UdpWire::Iperf3 { .. } => (Duration::ZERO, u64::MAX),
        }
    }

    /// Write `h` at the start of `buf`.
    pub(super) fn write(self, h: &DatagramHeader, buf: &mut [u8]) -> Result<(), HeaderError> {
        match self {
            UdpWire::Native => h.write(buf),
            UdpWire::Iperf3 { counters_64bit } => {
                let header = UdpHeader {
                    sec: u32::try_from(h.send_ns / 1_000_000_000).unwrap_or(u32::MAX),
                    usec: ((h.send_ns % 1_000_000_000) / 1_000) as u32,
                    seq: h.seq.saturating_add(1),
                };
                if header.write(buf, counters_64bit) {
                    Ok(())
                } else {
                    Err(HeaderError::TooShort {
                        len_bytes: buf.len(),
                    })
                }
            }
        }
    }

    /// Read the header of a datagram received on a socket serving `flow` (only one flow
    /// with iperf3's format; the native header names its own).
    pub(super) fn read(self, flow: u32, buf: &[u8]) -> Result<DatagramHeader, HeaderError> {
        match self {
            UdpWire::Native => DatagramHeader::parse(buf),
            UdpWire::Iperf3 { counters_64bit } => {
                let h = UdpHeader::parse(buf, counters_64bit).ok_or(HeaderError::TooShort {
                    len_bytes: buf.len(),
                })?;
                let seq = h.seq.checked_sub(1).ok_or(HeaderError::BadMagic {
                    found: buf.first_chunk::<4>().copied().unwrap_or_default(),
                })?;
                Ok(DatagramHeader {
                    flow,
                    seq,
                    send_ns: h.sent_ns(),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iperf3_headers_round_trip_with_numbers_from_one() {
        for counters_64bit in [false, true] {
            let w = UdpWire::Iperf3 { counters_64bit };
            let h = DatagramHeader {
                flow: 3,
                seq: 0,
                send_ns: 1_234_567_891,
            };
            let mut buf = [0u8; 32];
            w.write(&h, &mut buf).unwrap();
            // iperf3's first datagram is number 1; the time is kept to the µs.
            let seen = UdpHeader::parse(&buf, counters_64bit).unwrap();
            assert_eq!((seen.sec, seen.usec, seen.seq), (1, 234_567, 1));
            let back = w.read(3, &buf).unwrap();
            assert_eq!((back.flow, back.seq, back.send_ns), (3, 0, 1_234_567_000));
            assert!(w.read(3, &buf[..w.header_bytes() - 1]).is_err());
        }
        // A datagram numbered 0 is not iperf3's.
        let w = UdpWire::Iperf3 {
            counters_64bit: false,
        };
        assert!(matches!(
            w.read(0, &[0u8; 12]),
            Err(HeaderError::BadMagic { .. })
        ));
    }
}
