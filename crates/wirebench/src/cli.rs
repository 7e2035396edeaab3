//! The command tree: [`Cli`] and its [`Command`]s, each command's arguments defined in its
//! module (the test commands' in [`crate::args`]).

use clap::{Parser, Subcommand};

use crate::args::{CrrArgs, RrArgs, StreamArgs, UdpArgs};
use crate::commands::completions::CompletionsArgs;
use crate::commands::keygen::KeygenArgs;
use crate::commands::limits::LimitsArgs;
use crate::commands::plot::{PlotArgs, ReportArgs};
use crate::commands::serve::ServeArgs;
use crate::sweep::SweepArgs;

/// End-to-end TCP/IP performance lab.
#[derive(Debug, Parser)]
#[command(name = "wirebench", version, about, max_term_width = 100)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The command tree, with the text after `sweep --help` generated from the test
/// subcommands' own definitions (see [`crate::sweep::help`]). Parse with this, and generate
/// documentation from it.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let root = Cli::command();
    let text = crate::sweep::help::after_help(&root);
    root.mut_subcommand("sweep", |s| s.after_help(text))
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon that clients test against.
    Serve(ServeArgs),
    /// TCP bulk-transfer test (like netperf TCP_STREAM / iperf3). Without -H, runs against an
    /// embedded server on loopback.
    Stream(StreamArgs),
    /// TCP request/response (netperf TCP_RR), or UDP with --udp (UDP_RR): transactions per
    /// second and round-trip latency percentiles.
    Rr(RrArgs),
    /// TCP connect/request/response/close, a new connection per transaction (netperf TCP_CRR).
    Crr(CrrArgs),
    /// UDP stream with exact loss, reordering, duplication and jitter accounting (iperf3 -u).
    Udp(UdpArgs),
    /// Print a new `IDENTITY KEY` line for a `serve --auth-keys` file (32 random bytes, hex).
    Keygen(KeygenArgs),
    /// A named testbed of network namespaces (client and server hosts joined by a veth pair,
    /// optionally through the link emulator): up, show, exec, down.
    Lab(crate::commands::lab::LabArgs),
    /// A test over a grid of factor values, each point a complete result, the curves
    /// analysed (saturation, n½, dips, Hockney fit, load knee).
    Sweep(SweepArgs),
    /// Tests over testbed cells (MTU, offloads, rate, delay/loss, congestion control,
    /// sysctls, CPU placement) built on this machine from a study file: run, show.
    Study(crate::study::StudyArgs),
    /// Tests between many hosts' daemons (full mesh, star, incast, ring or pairs), never two
    /// throughput tests on one host at once; heatmaps per ordered pair.
    Mesh(crate::commands::mesh::MeshArgs),
    /// Draw a result (a test's or a sweep's JSON, or a sweep's -o directory) as SVG.
    Plot(PlotArgs),
    /// Write a result as one self-contained HTML page (inline SVG and CSS, opens offline).
    Report(ReportArgs),
    /// This machine's physical limits in a few seconds: memory copy and checksum bandwidth
    /// per buffer size, system call cost, wake-up latency, how fast bytes cross between two
    /// CPUs, the loopback TCP ceiling. Cached per boot; stream results are compared with them.
    Limits(LimitsArgs),
    /// The results history (every test is saved to a local database unless --no-save):
    /// list, show, export, delete, prune, import, compare, regress.
    History(crate::history::HistoryArgs),
    /// Compare result files (A.json B.json, or sets split by `vs`) figure by figure, with
    /// statistics: the change, its confidence interval, and whether it is real.
    Compare(crate::history::judge::CompareFilesArgs),
    /// Print a shell completion script on stdout, e.g. `wirebench completions bash >
    /// /usr/share/bash-completion/completions/wirebench`.
    Completions(CompletionsArgs),
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// A sweep's and a study's points are parsed by [`crate::args::TestLine`]: its test
    /// subcommands are those of the command tree, flag for flag and word for word.
    #[test]
    fn test_line_is_the_test_subcommands() {
        let mut tree = super::command();
        let mut line = crate::args::TestLine::command();
        for name in crate::sweep::plan::TEST_COMMANDS {
            let a = tree
                .find_subcommand_mut(name)
                .expect("in the tree")
                .render_long_help();
            let b = line
                .find_subcommand_mut(name)
                .expect("in TestLine")
                .render_long_help();
            assert_eq!(a.to_string(), b.to_string(), "{name}");
        }
        assert_eq!(line.get_subcommands().count(), 4);
    }
}
