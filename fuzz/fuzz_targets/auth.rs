#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    wirebench_proto::fuzz_targets::auth(data);
});
