#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    wirebench_iperf3::fuzz_targets::iperf3_client(data);
});
