//! `wirebench-lab-emud NAME`: the emulator process of named lab NAME (what
//! `wirebench lab _emulate NAME` does), for tests and for programs that use the
//! `wirebench-lab` library without the `wirebench` binary. The state directory comes from
//! `$WIREBENCH_LAB_DIR` (default `/run/wirebench/lab`). Runs until killed.

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(name), None) = (args.next(), args.next()) else {
        eprintln!("usage: wirebench-lab-emud NAME");
        std::process::exit(2);
    };
    if let Err(e) = wirebench_lab::named::run_emulator(&name) {
        eprintln!("wirebench-lab-emud {name}: {e}");
        std::process::exit(1);
    }
}
