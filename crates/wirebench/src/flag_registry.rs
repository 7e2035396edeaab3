//! The flags the model and the error messages name, checked against the clap definitions:
//! every flag of [`flag_of`] (each spec field), [`FactorName::flag`] (each sweep factor) and
//! [`LimitName::flag`] (each server limit) is an option of the commands it belongs to, and
//! the sweep's [`factor_of`] reads each factor's flag back.

use std::collections::BTreeSet;

use clap::CommandFactory;
use wirebench_model::spec::WorkloadKind;
use wirebench_model::sweep::FactorName;
use wirebench_model::validate::{LimitName, SpecField};

use crate::cli::Cli;
use crate::specs::flag_of;
use crate::sweep::plan::{factor_of, TEST_COMMANDS};

/// The options of subcommand `name` as typed: `--long` and `-s`.
fn options_of(name: &str) -> BTreeSet<String> {
    let cli = Cli::command();
    let cmd = cli
        .find_subcommand(name)
        .unwrap_or_else(|| panic!("no subcommand {name}"));
    let mut out = BTreeSet::new();
    for arg in cmd.get_arguments() {
        out.extend(arg.get_long().map(|l| format!("--{l}")));
        out.extend(arg.get_short().map(|s| format!("-{s}")));
    }
    assert!(out.len() > 10, "{name}: {out:?}");
    out
}

/// The flags a message names: `-l/--msg-size (--send-size)` names three.
fn flags_in(text: &str) -> Vec<&str> {
    text.split(['/', ' ', '(', ')'])
        .filter(|t| t.starts_with('-'))
        .collect()
}

/// The client commands whose flags set `field`. No wildcard: a new field does not compile
/// here until it is given its commands.
fn commands_of(field: SpecField) -> &'static [&'static str] {
    use SpecField::*;
    const CLIENT: &[&str] = &["stream", "rr", "crr", "udp"];
    match field {
        Flows | DurationMs | WarmupMs | IntervalMs | WindowBytes | ServerCpu | ClientCpu
        | FqRateBps | ProfileHz | BufferOffsetBytes => CLIENT,
        Congestion | MssBytes | NotsentLowatBytes => &["stream", "rr", "crr"],
        SendSizeBytes | RecvSizeBytes | Verify | Threads | StopAfterBytes | RecvWait => &["stream"],
        DatagramBytes => &["udp"],
        RateBps => &["stream", "udp"],
        RequestSizeBytes | ResponseSizeBytes => &["rr", "crr"],
        Burst | TransactionsPerS | MaxOutstanding | TimeoutMs | BusyPollUs => &["rr"],
    }
}

/// The command that runs a workload (UDP RR is `rr --udp`).
fn command_of(kind: WorkloadKind) -> &'static str {
    match kind {
        WorkloadKind::Stream => "stream",
        WorkloadKind::Rr | WorkloadKind::UdpRr => "rr",
        WorkloadKind::Crr => "crr",
        WorkloadKind::UdpStream => "udp",
    }
}

#[test]
fn every_spec_field_names_flags_of_its_commands() {
    for &field in SpecField::ALL {
        let flags = flags_in(flag_of(field));
        assert!(!flags.is_empty(), "{field}: {:?}", flag_of(field));
        for cmd in commands_of(field) {
            let options = options_of(cmd);
            for flag in &flags {
                assert!(
                    options.contains(*flag),
                    "{field}: `{cmd} {flag}` is not an option (flag_of says {:?})",
                    flag_of(field)
                );
            }
        }
    }
}

#[test]
fn every_sweep_factor_is_a_flag_of_its_tests_and_reads_back() {
    for f in FactorName::ALL {
        assert!(!f.tests().is_empty(), "{f:?}");
        for &kind in f.tests() {
            let cmd = command_of(kind);
            assert!(TEST_COMMANDS.contains(&cmd), "{cmd}");
            assert!(
                options_of(cmd).contains(f.flag()),
                "{f:?}: `{cmd} {}` is not an option",
                f.flag()
            );
        }
        assert_eq!(factor_of(f.flag()), Some(f), "{}", f.flag());
    }
    // Short forms read back as the factor of their long form; other flags are no factor.
    for (short, f) in [
        ("-l", FactorName::MsgSize),
        ("-w", FactorName::Window),
        ("-P", FactorName::Flows),
        ("-b", FactorName::Rate),
        ("-C", FactorName::Congestion),
    ] {
        assert_eq!(factor_of(short), Some(f), "{short}");
    }
    for other in [
        "-t",
        "--duration",
        "-Z",
        "-R",
        "--bidir",
        "-",
        "--",
        "-lP",
        "msg-size",
    ] {
        assert_eq!(factor_of(other), None, "{other}");
    }
}

#[test]
fn every_limit_flag_is_an_option_of_serve() {
    let serve = options_of("serve");
    let mut named = 0;
    for l in LimitName::ALL {
        if let Some(flag) = l.flag() {
            assert!(
                serve.contains(flag),
                "{l:?}: `serve {flag}` is not an option"
            );
            named += 1;
        }
    }
    assert_eq!(named, 7);
}
