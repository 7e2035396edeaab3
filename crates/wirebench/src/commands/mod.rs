//! The entry point: parse the command line, dispatch to the subcommands. Output goes to
//! stdout (results only); diagnostics to stderr via tracing.
//!
//! One module per command, each owning its arguments; a command imports the shared modules
//! at the crate's top level ([`crate::args`], [`crate::specs`], [`crate::client`],
//! [`crate::output`], ...), never another command (a unit test checks that the crate's
//! modules import one another without a cycle).

pub mod completions;
pub mod keygen;
pub mod lab;
pub mod limits;
pub mod mesh;
pub mod plot;
pub mod serve;
pub mod test;

use wirebench_model::error::{ErrorInfo, ErrorKind};
use wirebench_net::runner::failed_result;
use wirebench_report::print;

use crate::cli::{Cli, Command};
use crate::specs::{crr_spec, rr_spec, stream_spec, udp_spec};
use crate::under_load::LoadPlan;
use crate::{EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use test::run_client;

/// Entry point; returns the process exit code.
pub fn main() -> i32 {
    let args: Vec<String> = std::env::args().collect();
    let wants_json = args.iter().any(|a| a == "--json" || a == "-J");
    if let Some(msg) = iperf3_habit(&args) {
        return usage_error(msg, wants_json);
    }
    let parsed = crate::cli::command()
        .try_get_matches_from(&args)
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m));
    let cli = match parsed {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind as K;
            if matches!(
                e.kind(),
                K::DisplayHelp | K::DisplayVersion | K::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return if e.kind() == K::DisplayHelpOnMissingArgumentOrSubcommand {
                    EXIT_USAGE
                } else {
                    EXIT_OK
                };
            }
            return usage_error(crate::args::first_line(&e.to_string()), wants_json);
        }
    };
    init_tracing(matches!(cli.command, Command::Serve(_) | Command::Lab(_)));
    match cli.command {
        Command::Serve(a) => match serve::serve(&a) {
            Ok(()) => EXIT_OK,
            Err(e) => {
                eprintln!("wirebench serve: {e:#}");
                EXIT_FAILED
            }
        },
        Command::Stream(a) if a.iperf3 => test::iperf3::run_stream(&a),
        Command::Stream(a) => run_client(&a.c, stream_spec(&a), None),
        Command::Rr(a) => run_client(&a.c, rr_spec(&a), LoadPlan::of(&a)),
        Command::Crr(a) => run_client(&a.c, crr_spec(&a), None),
        Command::Udp(a) if a.iperf3 => test::iperf3::run_udp(&a),
        Command::Udp(a) => run_client(&a.c, udp_spec(&a), None),
        Command::Lab(a) => lab::run(a),
        Command::Sweep(a) => crate::sweep::run(&a.test, &a.args),
        Command::Study(a) => crate::study::run(a),
        Command::Mesh(a) => mesh::run(&a),
        Command::Plot(a) => plot::plot(&a),
        Command::Report(a) => plot::report(&a),
        Command::Limits(a) => limits::run(&a),
        Command::Completions(a) => completions::run(&a, crate::cli::command()),
        Command::History(a) => crate::history::run(&a),
        Command::Compare(a) => crate::history::judge::compare_files(&a),
        Command::Keygen(a) => match keygen::keygen(&a) {
            Ok(()) => EXIT_OK,
            Err(e) => {
                eprintln!("wirebench keygen: {e:#}");
                EXIT_USAGE
            }
        },
    }
}

/// A usage error: on stderr, or inside a failed RunResult with --json; exit code 2.
fn usage_error(msg: String, wants_json: bool) -> i32 {
    if wants_json {
        let r = failed_result(None, None, false, ErrorInfo::new(ErrorKind::Usage, msg));
        print!("{}", print::json(&r));
    } else {
        eprintln!("wirebench: {msg} (see --help)");
    }
    EXIT_USAGE
}

/// iperf3's mode flags, which wirebench spells as subcommands: `-s` (server) and `-u` (UDP)
/// given without a subcommand or to a test subcommand get a message naming the subcommand.
/// (`-c HOST` and `-J` are accepted as -H and --json.)
pub(crate) fn iperf3_habit(args: &[String]) -> Option<String> {
    let first = args.get(1).map(String::as_str);
    let no_subcommand = first.is_none_or(|a| a.starts_with('-'));
    if !no_subcommand && !matches!(first, Some("stream" | "rr" | "crr" | "udp")) {
        return None;
    }
    let flag = |f: &str| args.iter().skip(1).any(|a| a == f);
    if flag("-s") {
        Some("-s is iperf3's server flag: use `wirebench serve` to run the daemon".into())
    } else if flag("-u") {
        Some("-u is iperf3's UDP flag: use `wirebench udp` for a UDP stream test".into())
    } else if no_subcommand && flag("-c") {
        Some(
            "the test is a subcommand: `wirebench stream -c HOST` (or -H HOST) is iperf3's -c"
                .into(),
        )
    } else {
        None
    }
}

fn init_tracing(daemon: bool) {
    let default = if daemon { "info" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
