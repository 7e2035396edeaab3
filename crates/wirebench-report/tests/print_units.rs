//! Tests of `wirebench_report::print::units`.

use wirebench_report::print::units::*;

#[test]
fn rates_pick_a_unit_or_keep_the_forced_one() {
    assert_eq!(RateUnit::AutoBits.rate(12.345e9), "12.35 Gbit/s");
    assert_eq!(RateUnit::AutoBits.rate(94.1e6), "94.10 Mbit/s");
    assert_eq!(RateUnit::AutoBits.rate(1_000.0), "1.000 kbit/s");
    assert_eq!(RateUnit::AutoBits.rate(12.0), "12.00 bit/s");
    assert_eq!(RateUnit::AutoBits.rate(150e12), "150.0 Tbit/s");
    assert_eq!(RateUnit::Mbit.rate(12.345e9), "12345 Mbit/s");
    assert_eq!(RateUnit::GByte.rate(8e9), "1.000 GB/s");
    assert_eq!(RateUnit::AutoBytes.rate(80e6), "10.00 MB/s");
    assert_eq!("g".parse::<RateUnit>(), Ok(RateUnit::Gbit));
    assert!("x".parse::<RateUnit>().is_err());
}

#[test]
fn bytes_sizes_and_durations() {
    assert_eq!(bytes(512), "512 B");
    assert_eq!(bytes(1536), "1.500 KiB");
    assert_eq!(bytes(1_342_177_280), "1.250 GiB");
    assert_eq!(size(1 << 20), "1M");
    assert_eq!(size(128 * 1024), "128K");
    assert_eq!(size(1400), "1400");
    assert_eq!(duration_ns(850.0), "850 ns");
    assert_eq!(duration_ns(12_300.0), "12.30 µs");
    assert_eq!(duration_ns(2_275_000.0), "2.275 ms");
    assert_eq!(number(f64::NAN), "n/a");
}
