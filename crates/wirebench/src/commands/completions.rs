//! `wirebench completions`: a shell completion script generated from the command tree.

use clap::Args;

use crate::EXIT_OK;

/// `wirebench completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell the script is for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Print the completion script of command tree `cmd` for `a.shell` on stdout.
pub fn run(a: &CompletionsArgs, mut cmd: clap::Command) -> i32 {
    clap_complete::generate(a.shell, &mut cmd, "wirebench", &mut std::io::stdout());
    EXIT_OK
}
