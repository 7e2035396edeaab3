//! The engines' data buffers: every buffer a data path reads into or writes from is made
//! here, from [`wirebench_sys::mem::PlacedBuf`], at the run's buffer offset (bytes past a
//! page boundary; 0 unless `--buffer-offset` says otherwise).
//!
//! Where a buffer lies decides how fast the kernel copies into and out of it on some CPUs
//! (see [`wirebench_sys::mem`]): left to the allocator, a large block lands 16 bytes past a
//! page boundary, and its placement can change as a long-lived daemon frees other blocks.

use wirebench_sys::datapath::fill_random;
use wirebench_sys::mem::PlacedBuf;

/// A zero-filled buffer of `len` bytes, `offset` bytes past a page boundary.
///
/// # Panics
/// If the system refuses the memory, as `vec!` would; sizes are bounded by the spec's
/// validation.
pub(crate) fn zeroed(len: usize, offset: usize) -> PlacedBuf {
    PlacedBuf::at_offset(len, offset)
        .unwrap_or_else(|e| panic!("cannot map a {len}-byte data buffer at offset {offset}: {e}"))
}

/// A buffer of `len` pseudo-random (incompressible) bytes, `offset` bytes past a page
/// boundary.
pub(crate) fn random(len: usize, offset: usize) -> PlacedBuf {
    let mut b = zeroed(len, offset);
    fill_random(&mut b);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placed_at_the_offset_asked_for() {
        for offset in [0, 16, 2048] {
            assert_eq!(zeroed(3000, offset).offset(), offset);
            let r = random(70_000, offset);
            assert_eq!(r.offset(), offset);
            assert!(r.iter().any(|&b| b != 0));
        }
    }

    /// Every engine's data buffers come from this module: no data-path source file makes a
    /// byte buffer of its own (outside its tests), so none is left where the allocator puts it.
    #[test]
    fn no_engine_makes_a_data_buffer_of_its_own() {
        let sources = [
            ("stream/mod.rs", include_str!("stream/mod.rs")),
            ("stream/many.rs", include_str!("stream/many.rs")),
            ("paths.rs", include_str!("paths.rs")),
            ("rr/tcp.rs", include_str!("rr/tcp.rs")),
            ("rr/crr.rs", include_str!("rr/crr.rs")),
            ("rr/udp.rs", include_str!("rr/udp.rs")),
            ("rr/io.rs", include_str!("rr/io.rs")),
            ("udp/send.rs", include_str!("udp/send.rs")),
            ("udp/recv.rs", include_str!("udp/recv.rs")),
            ("limits/memory.rs", include_str!("limits/memory.rs")),
            ("limits/transfer.rs", include_str!("limits/transfer.rs")),
        ];
        for (name, text) in sources {
            let production = text.split("#[cfg(test)]").next().unwrap_or(text);
            for bad in [
                "vec![0u8",
                "Vec::<u8>::with_capacity",
                ".collect::<Vec<u8>>",
            ] {
                assert!(
                    !production.contains(bad),
                    "{name} makes a data buffer with `{bad}`: use crate::buffers"
                );
            }
        }
    }
}
