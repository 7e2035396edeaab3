//! iperf3's UDP datagrams: the connect/reply datagrams of the setup and the header of every
//! data datagram (sender timestamp, sequence number), all big-endian.

/// The client's connect datagram ("9876"; 3.12 and later).
pub const CONNECT: [u8; 4] = *b"9876";

/// The server's reply ("6789").
pub const REPLY: [u8; 4] = *b"6789";

/// The reply of iperf3 ≤ 3.11 (987654321 as a little-endian u32), also accepted by clients.
pub const LEGACY_REPLY: [u8; 4] = [0xb1, 0x68, 0xde, 0x3a];

/// The connect datagram of iperf3 ≤ 3.11 (123456789 little-endian).
pub const LEGACY_CONNECT: [u8; 4] = [0x15, 0xcd, 0x5b, 0x07];

/// Bytes of the header with 32-bit sequence numbers.
pub const HEADER_BYTES_32: usize = 12;

/// Bytes of the header with 64-bit sequence numbers.
pub const HEADER_BYTES_64: usize = 16;

/// A data datagram's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpHeader {
    /// Sender's monotonic clock, seconds.
    pub sec: u32,
    /// Sender's monotonic clock, microseconds.
    pub usec: u32,
    /// Sequence number (from 1).
    pub seq: u64,
}

impl UdpHeader {
    /// Read the header of a datagram; `None` if it is too short.
    pub fn parse(b: &[u8], counters_64bit: bool) -> Option<UdpHeader> {
        let word = |at: usize| -> Option<u32> {
            Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
        };
        let seq = if counters_64bit {
            u64::from_be_bytes(b.get(8..16)?.try_into().ok()?)
        } else {
            u64::from(word(8)?)
        };
        Some(UdpHeader {
            sec: word(0)?,
            usec: word(4)?,
            seq,
        })
    }

    /// Write the header into the start of `b`; false if `b` is too short.
    pub fn write(&self, b: &mut [u8], counters_64bit: bool) -> bool {
        let need = if counters_64bit {
            HEADER_BYTES_64
        } else {
            HEADER_BYTES_32
        };
        if b.len() < need {
            return false;
        }
        b[0..4].copy_from_slice(&self.sec.to_be_bytes());
        b[4..8].copy_from_slice(&self.usec.to_be_bytes());
        if counters_64bit {
            b[8..16].copy_from_slice(&self.seq.to_be_bytes());
        } else {
            b[8..12].copy_from_slice(&(self.seq as u32).to_be_bytes());
        }
        true
    }

    /// The timestamp in nanoseconds.
    pub fn sent_ns(&self) -> u64 {
        u64::from(self.sec) * 1_000_000_000 + u64::from(self.usec.min(999_999)) * 1_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_captured_first_datagram() {
        let b = [0, 0, 1, 0x70, 0, 3, 0x44, 0xde, 0, 0, 0, 1, 0x49, 0x7d];
        let h = UdpHeader::parse(&b, false).unwrap();
        assert_eq!((h.sec, h.usec, h.seq), (368, 214_238, 1));
        let mut w = [0u8; 16];
        assert!(h.write(&mut w, true));
        assert_eq!(UdpHeader::parse(&w, true), Some(h));
        assert_eq!(UdpHeader::parse(&b[..11], false), None);
    }
}
