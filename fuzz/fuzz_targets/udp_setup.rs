#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    wirebench_proto::udpsetup::fuzz_udp_setup(data);
});
