//! The kernel's tick rate (`CONFIG_HZ`), and whether a sampling rate falls in step with it
//! or with round-millisecond timers.
//!
//! The `cpu-clock` event fires on an hrtimer of fixed period. When that period is a whole
//! number of kernel ticks, every sample lands at the same phase of the tick: on the CPU the
//! tick wakes, right after it (the tick handler, the wake-up it caused) or always in the same
//! part of the idle gap. Two profiles of one CPU over one window then disagree by tens of
//! points (measured with `CONFIG_HZ=250` at 250 Hz: one end's profile saw a CPU 96 % idle
//! while the other end's saw it 52 % idle; at 241 Hz both ends agreed within 2 points).

use std::io::Read;

/// `CONFIG_HZ` of the running kernel: from `/boot/config-<release>`, else the compressed
/// `/proc/config.gz`; `None` where neither is readable (or names no `CONFIG_HZ`). Read once
/// per process.
pub fn kernel_tick_hz() -> Option<u32> {
    static TICK_HZ: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *TICK_HZ.get_or_init(read_tick_hz)
}

fn read_tick_hz() -> Option<u32> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    let boot = format!("/boot/config-{}", release.trim());
    if let Ok(text) = std::fs::read_to_string(&boot) {
        if let Some(hz) = config_hz(&text) {
            return Some(hz);
        }
    }
    let file = std::fs::File::open("/proc/config.gz").ok()?;
    // A kernel config is about 300 KB uncompressed; 4 MiB bounds the read.
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .take(4 << 20)
        .read_to_string(&mut text)
        .ok()?;
    config_hz(&text)
}

/// The value of the `CONFIG_HZ=` line of a kernel config.
pub fn config_hz(config: &str) -> Option<u32> {
    config
        .lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.trim().parse().ok())
        .filter(|&hz| hz > 0)
}

/// The rate of the periodic activity every machine has besides the tick: timers armed in
/// whole milliseconds (pacers, the scheduler's and the network stack's own), Hz.
pub const MILLISECOND_HZ: u32 = 1000;

/// Fewer distinct phases of a periodic activity than this, and a profile is in step with it.
/// 241 Hz against a 250 Hz tick samples 241 phases; 4 kHz against a 1 ms timer only 4, and
/// two ends' profiles of one CPU at 4 kHz disagreed by up to 18 points (docs/PROFILE.md).
pub const MIN_PHASES: u32 = 50;

/// How many distinct phases of an activity of rate `periodic_hz` samples at `freq_hz` fall
/// on: `freq_hz / gcd(freq_hz, periodic_hz)` (1 when the sampling period is a whole number
/// of the activity's periods; 4 for 4 kHz against 1 ms).
pub fn phases(freq_hz: u32, periodic_hz: u32) -> u32 {
    let (mut a, mut b) = (freq_hz, periodic_hz);
    while b != 0 {
        (a, b) = (b, a % b);
    }
    freq_hz.checked_div(a).unwrap_or(0)
}

/// What a profile at `freq_hz` is in step with: the kernel's tick (`tick_hz`, when known) or
/// a millisecond ([`MILLISECOND_HZ`]), whichever it samples at the fewest phases of, when
/// that is fewer than [`MIN_PHASES`]: `(periodic_hz, phases)`.
pub fn in_step(freq_hz: u32, tick_hz: Option<u32>) -> Option<(u32, u32)> {
    if freq_hz == 0 {
        return None;
    }
    tick_hz
        .into_iter()
        .chain([MILLISECOND_HZ])
        .filter(|&hz| hz > 0)
        .map(|hz| (hz, phases(freq_hz, hz)))
        .filter(|&(_, n)| n < MIN_PHASES)
        .min_by_key(|&(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_hz_reads_the_line_and_nothing_else() {
        let c =
            "# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\nCONFIG_HZ_PERIODIC=n\n";
        assert_eq!(config_hz(c), Some(250));
        assert_eq!(config_hz("CONFIG_HZ_1000=y\n"), None);
        assert_eq!(config_hz("CONFIG_HZ=0\n"), None);
    }

    #[test]
    fn phases_of_a_tick_and_of_a_millisecond() {
        assert_eq!(phases(250, 250), 1);
        assert_eq!(phases(125, 250), 1);
        assert_eq!(phases(4000, 1000), 4);
        assert_eq!(phases(4000, 250), 16);
        assert_eq!(phases(241, 250), 241);
        assert_eq!(phases(3989, 1000), 3989);
        assert_eq!(phases(300, 1000), 3);
        assert_eq!(phases(0, 250), 0);
    }

    #[test]
    fn a_prime_rate_is_out_of_step_and_round_rates_are_not() {
        assert_eq!(in_step(250, Some(250)), Some((250, 1)));
        assert_eq!(in_step(250, None), Some((1000, 1)));
        assert_eq!(in_step(4000, Some(250)), Some((1000, 4)));
        assert_eq!(in_step(100, Some(1000)), Some((1000, 1)));
        assert_eq!(in_step(241, Some(250)), None);
        assert_eq!(in_step(3989, Some(300)), None);
        assert_eq!(in_step(99, Some(100)), None);
        assert_eq!(in_step(0, Some(250)), None);
    }

    /// The running kernel's tick is what an independent reader (the shell's `zcat`) finds in
    /// the same files, or nothing when neither file is there; and it is one of the rates
    /// Linux offers (`CONFIG_HZ_100` .. `CONFIG_HZ_1000`).
    #[test]
    fn this_kernels_tick_agrees_with_zcat() {
        let out = std::process::Command::new("sh")
            .args([
                "-c",
                "cat /boot/config-$(uname -r) 2>/dev/null || zcat /proc/config.gz 2>/dev/null",
            ])
            .output()
            .unwrap();
        let shell = String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("CONFIG_HZ=")?.trim().parse::<u32>().ok());
        assert_eq!(kernel_tick_hz(), shell);
        if let Some(hz) = shell {
            assert!([100, 250, 300, 1000].contains(&hz), "{hz}");
        }
    }
}
