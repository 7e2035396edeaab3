//! The results history: every test saved to a local SQLite database by default
//! ([`save`]), and `wirebench history` to list, show, export, delete, prune, import,
//! compare and check for regressions ([`cmds`], [`judge`]); `wirebench compare` on result
//! files without a database; `serve --db` saves the daemon's records ([`daemon`]).
//!
//! The database is `--db PATH`, else `$XDG_DATA_HOME/wirebench/history.db`, else
//! `$HOME/.local/share/wirebench/history.db` ([`default_db`]).

pub mod cmds;
pub mod daemon;
pub mod judge;
pub mod save;
pub mod select;

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// Where results are saved: the flags every client command takes.
#[derive(Debug, Args, Clone, Default)]
pub struct SaveArgs {
    /// The history database (default `$XDG_DATA_HOME/wirebench/history.db`, or
    /// `~/.local/share/wirebench/history.db`).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Do not save this result to the history database.
    #[arg(long, conflicts_with = "db")]
    pub no_save: bool,
    /// A KEY=VALUE tag saved with the result (repeatable), e.g. --tag kernel=6.12.
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = select::parse_tag)]
    pub tags: Vec<(String, String)>,
}

/// The default database path: `$XDG_DATA_HOME/wirebench/history.db` when that variable is
/// an absolute path (the XDG rule: a relative one is ignored), else
/// `$HOME/.local/share/wirebench/history.db`; `None` without either.
pub fn default_db() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let base = xdg.or_else(|| {
        std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .map(|h| h.join(".local/share"))
    })?;
    Some(base.join("wirebench/history.db"))
}

/// The database `--db` names, or the default.
pub fn db_path(db: Option<&PathBuf>) -> Option<PathBuf> {
    db.cloned().or_else(default_db)
}

/// `wirebench history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The history database (default as for saving).
    #[arg(long, value_name = "PATH", global = true)]
    pub db: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: HistoryCommand,
}

/// `wirebench history` subcommands.
#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Stored results, newest first.
    List(cmds::ListArgs),
    /// One stored result, printed as the test printed it (or its JSON with --json).
    Show(cmds::ShowArgs),
    /// Stored results as JSON (one document, or an array) or CSV rows.
    Export(cmds::ExportArgs),
    /// Delete one stored result.
    Delete(cmds::DeleteArgs),
    /// Delete the results older than DAYS days.
    Prune(cmds::PruneArgs),
    /// Store result JSON files and the daemon's --records JSON lines.
    Import(cmds::ImportArgs),
    /// Compare two sets of stored results figure by figure, with statistics.
    Compare(judge::CompareArgs),
    /// Exit 1 when the newest result (or the candidate set) is significantly worse than the
    /// baseline by more than the threshold, 0 otherwise (2: nothing to judge).
    Regress(judge::RegressArgs),
}

/// Run `wirebench history`; the exit code.
pub fn run(a: &HistoryArgs) -> i32 {
    let Some(path) = db_path(a.db.as_ref()) else {
        eprintln!("wirebench history: no database: give --db PATH (neither XDG_DATA_HOME nor HOME is set)");
        return crate::EXIT_USAGE;
    };
    match &a.command {
        HistoryCommand::List(x) => cmds::list(&path, x),
        HistoryCommand::Show(x) => cmds::show(&path, x),
        HistoryCommand::Export(x) => cmds::export(&path, x),
        HistoryCommand::Delete(x) => cmds::delete(&path, x),
        HistoryCommand::Prune(x) => cmds::prune(&path, x),
        HistoryCommand::Import(x) => cmds::import(&path, x),
        HistoryCommand::Compare(x) => judge::compare_db(&path, x),
        HistoryCommand::Regress(x) => judge::regress(&path, x),
    }
}
