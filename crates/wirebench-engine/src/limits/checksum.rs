//! The Internet checksum (RFC 1071) in user space: the one's-complement sum of the data as
//! 16-bit big-endian words, a trailing odd byte padded with a zero byte.
//!
//! This is wirebench's own implementation, timed by `wirebench limits` as a proxy for the
//! kernel's `csum_partial`; it is not the kernel's code. It adds native-endian 32-bit words
//! into four 64-bit accumulators (no carry handling is needed until 2^32 additions, which
//! the compiler vectorizes), folds them with end-around carries, and relies on the sum's
//! byte-order independence (RFC 1071 §2(B)) to give the big-endian result on any machine.

/// 32-bit words one accumulator can take before it could overflow (2^32 − 1 words of at
/// most 2^32 − 1 each stay below 2^64); blocks are folded at this bound.
const WORDS_PER_BLOCK: usize = u32::MAX as usize;

/// `a + b` in one's-complement arithmetic on 64 bits (end-around carry).
#[inline]
fn add_carry(a: u64, b: u64) -> u64 {
    let (s, c) = a.overflowing_add(b);
    s + u64::from(c)
}

/// A 64-bit one's-complement sum folded to 16 bits.
#[inline]
fn fold(mut s: u64) -> u16 {
    s = (s & 0xffff_ffff) + (s >> 32);
    s = (s & 0xffff_ffff) + (s >> 32);
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    s as u16
}

/// The sum of `block`'s native-endian 32-bit words (its length a multiple of 16 bytes and at
/// most [`WORDS_PER_BLOCK`] words), in one's-complement arithmetic on 64 bits.
#[inline]
fn sum_block(block: &[u8]) -> u64 {
    let mut acc = [0u64; 4];
    for c in block.chunks_exact(16) {
        for (i, a) in acc.iter_mut().enumerate() {
            let w = [c[4 * i], c[4 * i + 1], c[4 * i + 2], c[4 * i + 3]];
            *a += u64::from(u32::from_ne_bytes(w));
        }
    }
    acc.into_iter().fold(0, add_carry)
}

/// The one's-complement sum of `data` as 16-bit big-endian words (RFC 1071), folded to 16
/// bits; the Internet checksum is its complement ([`internet_checksum`]).
pub fn ones_complement_sum(data: &[u8]) -> u16 {
    let whole = data.len() - data.len() % 16;
    let (body, tail) = data.split_at(whole);
    let mut sum = body
        .chunks(WORDS_PER_BLOCK / 4 * 16)
        .map(sum_block)
        .fold(0, add_carry);
    for w in tail.chunks(4) {
        let mut word = [0u8; 4];
        word[..w.len()].copy_from_slice(w);
        sum = add_carry(sum, u64::from(u32::from_ne_bytes(word)));
    }
    // The sum of native-endian words is the byte-swapped big-endian sum on a little-endian
    // machine and the big-endian sum itself on a big-endian one.
    u16::from_be_bytes(fold(sum).to_ne_bytes())
}

/// The Internet checksum of `data` (RFC 1071): the complement of
/// [`ones_complement_sum`], as a number whose big-endian bytes go into the header.
pub fn internet_checksum(data: &[u8]) -> u16 {
    !ones_complement_sum(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The textbook definition: 16-bit big-endian words, odd byte padded, folded at the end.
    fn reference(data: &[u8]) -> u16 {
        let mut s: u64 = 0;
        for w in data.chunks(2) {
            let hi = u64::from(w[0]) << 8;
            let lo = w.get(1).map_or(0, |&b| u64::from(b));
            s += hi | lo;
        }
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        s as u16
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: the bytes 00 01 f2 03 f4 f5 f6 f7 sum to dd f2.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(ones_complement_sum(&data), 0xddf2);
        assert_eq!(internet_checksum(&data), 0x220d);
    }

    #[test]
    fn ipv4_header() {
        // A 20-byte IPv4 header with its checksum field zeroed; the checksum is b861, and
        // the header with it filled in sums to ffff (checksum 0).
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(internet_checksum(&h), 0xb861);
        h[10..12].copy_from_slice(&0xb861u16.to_be_bytes());
        assert_eq!(internet_checksum(&h), 0);
    }

    #[test]
    fn odd_lengths() {
        // One byte: the high byte of a padded word.
        assert_eq!(ones_complement_sum(&[0xab]), 0xab00);
        assert_eq!(ones_complement_sum(&[0x01, 0x02, 0x03]), 0x0102 + 0x0300);
        assert_eq!(ones_complement_sum(&[]), 0);
        assert_eq!(internet_checksum(&[]), 0xffff);
    }

    #[test]
    fn agrees_with_the_definition_at_every_length_and_alignment() {
        // A deterministic pseudo-random buffer (xorshift), with all-ones runs to force carries.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut buf: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        buf[1000..1600].fill(0xff);
        for start in 0..8 {
            for len in (0..300).chain([1023, 1024, 1025, 2047, 4088 - start]) {
                let d = &buf[start..start + len];
                assert_eq!(
                    ones_complement_sum(d),
                    reference(d),
                    "start {start} len {len}"
                );
            }
        }
        let ones = vec![0xffu8; 100_001];
        assert_eq!(ones_complement_sum(&ones), reference(&ones));
    }

    #[test]
    fn fold_keeps_carries() {
        assert_eq!(fold(u64::MAX), 0xffff);
        assert_eq!(fold(0x1_0000), 1);
        assert_eq!(fold(0xffff_0001), 1);
        assert_eq!(add_carry(u64::MAX, 1), 1);
    }
}
