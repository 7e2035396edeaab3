//! `wirebench`: see `wirebench --help`.

fn main() {
    std::process::exit(wirebench::commands::main());
}
