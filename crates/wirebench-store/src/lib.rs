//! wirebench's results history: every result in a local SQLite database.
//!
//! One row per saved result holds its whole JSON document (a `RunResult`, a `SweepResult`
//! or a study's manifest and points, as the caller serialized it) plus the columns `history list` filters and
//! sorts on (time, hosts, kernel, workload, headline figures); tags are rows of their own.
//! The schema is versioned by `PRAGMA user_version` and moved forward by the embedded SQL
//! files in `migrations/` ([`MIGRATIONS`]), each applied in its own transaction with the
//! version bump, so a database is at one version or the next, never between.
//!
//! The database runs in WAL mode with a busy timeout ([`BUSY_TIMEOUT`]): several clients
//! (tests on one machine, a daemon) save at once and each waits its turn. A save is one
//! transaction: a process killed during it leaves the whole result or none.
//!
//! This crate knows nothing of wirebench's types: the caller extracts the columns
//! ([`NewResult`]) and keeps the JSON; nothing here parses a document.

mod query;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

pub use query::{Filter, Order};

/// The embedded migrations, in order: migration `i` moves the schema from version `i` to
/// `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_results.sql"),
    include_str!("../migrations/0002_source_hosts.sql"),
];

/// The schema version this build writes ([`MIGRATIONS`]' count).
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// How long a save waits for another writer's transaction before it gives up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether SQLite said the database was locked by another connection.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Why the history could not be opened, read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database's directory could not be created.
    #[error("cannot create the directory {dir}: {source}")]
    Directory {
        /// The directory.
        dir: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// SQLite refused (locked, corrupt, full disk, read-only, ...).
    #[error("{0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The file was written by a newer wirebench.
    #[error("schema version {found} is newer than this wirebench's {supported}")]
    TooNew {
        /// The file's version.
        found: u32,
        /// This build's version.
        supported: u32,
    },
}

/// A result to save: its document and the columns extracted from it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewResult {
    /// What the document is.
    pub kind: ResultKind,
    /// The result's start, milliseconds since the Unix epoch.
    pub started_unix_ms: i64,
    /// The user's title.
    pub title: Option<String>,
    /// The workload's name (`stream`, `rr`, ...).
    pub workload: Option<String>,
    /// How it ended (`completed`, ...).
    pub status: Option<String>,
    /// The client's host name.
    pub client_host: Option<String>,
    /// The server's host name (or its address).
    pub server_host: Option<String>,
    /// The client's kernel release.
    pub kernel: Option<String>,
    /// Headline figures.
    pub figures: Headline,
    /// `KEY=VALUE` tags (keys unique).
    pub tags: Vec<(String, String)>,
    /// Where it came from.
    pub source: Source,
    /// The whole JSON document.
    pub document: String,
}

/// The headline figures kept as columns (medians over the result's runs).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Headline {
    /// Receiver throughput, all directions, bits per second.
    pub throughput_bps: Option<f64>,
    /// Transactions per second.
    pub transactions_per_s: Option<f64>,
    /// Median round trip, ns.
    pub rtt_p50_ns: Option<f64>,
    /// 99th percentile round trip, ns.
    pub rtt_p99_ns: Option<f64>,
}

/// What a stored document is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ResultKind {
    /// A `RunResult` (test).
    #[default]
    Run,
    /// A `SweepResult`.
    Sweep,
    /// A study: `{"manifest": StudyManifest, "points": [StudyPoint]}`.
    Study,
    /// A test of a mesh: its `RunResult`, tagged with the mesh (`mesh`, its start in ms
    /// since the epoch) and the pair (`mesh_client`, `mesh_server`).
    Mesh,
}

impl ResultKind {
    /// The column's text.
    pub fn as_str(self) -> &'static str {
        match self {
            ResultKind::Run => "run",
            ResultKind::Sweep => "sweep",
            ResultKind::Study => "study",
            ResultKind::Mesh => "mesh",
        }
    }
}

/// Where a stored result came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Source {
    /// A command run on this machine.
    #[default]
    Cli,
    /// The daemon's records (`serve --db`).
    Daemon,
    /// `history import`.
    Import,
}

impl Source {
    /// The column's text.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Cli => "cli",
            Source::Daemon => "daemon",
            Source::Import => "import",
        }
    }
}

/// A stored result's columns (what `history list` prints).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Its id.
    pub id: i64,
    /// `run`, `sweep` or `study`.
    pub kind: String,
    /// The result's start, ms since the epoch.
    pub started_unix_ms: i64,
    /// The user's title.
    pub title: Option<String>,
    /// The workload.
    pub workload: Option<String>,
    /// How it ended.
    pub status: Option<String>,
    /// The client's host name.
    pub client_host: Option<String>,
    /// The server's host name or address.
    pub server_host: Option<String>,
    /// The client's kernel release.
    pub kernel: Option<String>,
    /// Headline figures.
    pub figures: Headline,
    /// Where it came from (`cli`, `daemon`, `import`).
    pub source: String,
    /// Its tags, by key.
    pub tags: Vec<(String, String)>,
}

/// An open history database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Open (creating the file and its directory if needed) and migrate to
    /// [`SCHEMA_VERSION`].
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Self::open_at(path, SCHEMA_VERSION)
    }

    /// Open and migrate up to `version` only (tests build older schemas with it).
    ///
    /// Two processes that open a new file at once can meet a lock the busy handler does
    /// not wait for (switching the file to WAL takes an exclusive lock, and SQLite returns
    /// `SQLITE_BUSY` at once where waiting could deadlock): the whole opening is tried again
    /// for up to [`BUSY_TIMEOUT`].
    pub fn open_at(path: &Path, version: u32) -> Result<Store, StoreError> {
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        loop {
            match Self::open_once(path, version) {
                Err(StoreError::Sqlite(e))
                    if is_busy(&e) && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
                r => return r,
            }
        }
    }

    /// One attempt of [`Store::open_at`].
    fn open_once(path: &Path, version: u32) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Directory {
                dir: dir.to_path_buf(),
                source,
            })?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // WAL: readers never block the writer; NORMAL sync is durable across a process
        // kill (a power loss may lose the last transactions, never corrupt the file).
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.migrate(version)?;
        Ok(store)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open file.
    pub fn version(&self) -> Result<u32, StoreError> {
        Ok(self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?)
    }

    fn migrate(&mut self, target: u32) -> Result<(), StoreError> {
        let found = self.version()?;
        if found > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                found,
                supported: SCHEMA_VERSION,
            });
        }
        for v in found..target.min(SCHEMA_VERSION) {
            // IMMEDIATE: two processes opening a new file at once migrate one after the
            // other; the second finds the version already moved and does nothing.
            let tx = self
                .conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let now: u32 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
            if now == v {
                tx.execute_batch(MIGRATIONS[v as usize])?;
                tx.pragma_update(None, "user_version", v + 1)?;
            }
            tx.commit()?;
        }
        Ok(())
    }

    /// Save a result and its tags in one transaction; returns its id.
    pub fn save(&mut self, r: &NewResult, saved_unix_ms: i64) -> Result<i64, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let id = insert(&tx, r, saved_unix_ms)?;
        tx.commit()?;
        Ok(id)
    }

    /// Insert a result inside a transaction the caller opened (`BEGIN` … `COMMIT` on
    /// [`Store::connection`]), for building large databases fast (benchmarks, imports).
    pub fn save_in_open_transaction(
        &mut self,
        r: &NewResult,
        saved_unix_ms: i64,
    ) -> Result<i64, StoreError> {
        insert(&self.conn, r, saved_unix_ms)
    }

    /// The rows the filter selects, in its order, without their documents.
    pub fn list(&self, f: &Filter) -> Result<Vec<Row>, StoreError> {
        query::list(&self.conn, f)
    }

    /// The ids the filter selects, in its order.
    pub fn ids(&self, f: &Filter) -> Result<Vec<i64>, StoreError> {
        query::ids(&self.conn, f)
    }

    /// One result's row and document.
    pub fn get(&self, id: i64) -> Result<Option<(Row, String)>, StoreError> {
        let f = Filter {
            ids: vec![id],
            ..Filter::default()
        };
        let Some(row) = query::list(&self.conn, &f)?.pop() else {
            return Ok(None);
        };
        let doc: String =
            self.conn
                .query_row("SELECT document FROM results WHERE id = ?1", [id], |r| {
                    r.get(0)
                })?;
        Ok(Some((row, doc)))
    }

    /// Documents of several results, by id (missing ids are left out).
    pub fn documents(&self, ids: &[i64]) -> Result<Vec<(i64, String)>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached("SELECT document FROM results WHERE id = ?1")?;
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            if let Some(doc) = st.query_row([id], |r| r.get::<_, String>(0)).optional()? {
                out.push((id, doc));
            }
        }
        Ok(out)
    }

    /// Delete one result (and its tags); false if there was none.
    pub fn delete(&mut self, id: i64) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .execute("DELETE FROM results WHERE id = ?1", [id])?
            > 0)
    }

    /// Delete the results that started before `before_unix_ms`; returns how many.
    pub fn prune(&mut self, before_unix_ms: i64) -> Result<usize, StoreError> {
        Ok(self.conn.execute(
            "DELETE FROM results WHERE started_unix_ms < ?1",
            [before_unix_ms],
        )?)
    }

    /// `PRAGMA integrity_check`'s answer (`ok` for a sound file).
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        Ok(self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
    }

    /// The connection, for tests and benchmarks that build databases in bulk.
    pub fn connection(&mut self) -> &mut Connection {
        &mut self.conn
    }
}

/// The INSERTs of one result and its tags, on a connection inside a transaction.
fn insert(conn: &Connection, r: &NewResult, saved_unix_ms: i64) -> Result<i64, StoreError> {
    conn.prepare_cached(
        "INSERT INTO results (kind, started_unix_ms, saved_unix_ms, title, workload, status,
            client_host, server_host, kernel, throughput_bps, transactions_per_s,
            rtt_p50_ns, rtt_p99_ns, document, source)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    )?
    .execute(params![
        r.kind.as_str(),
        r.started_unix_ms,
        saved_unix_ms,
        r.title,
        r.workload,
        r.status,
        r.client_host,
        r.server_host,
        r.kernel,
        r.figures.throughput_bps,
        r.figures.transactions_per_s,
        r.figures.rtt_p50_ns,
        r.figures.rtt_p99_ns,
        r.document,
        r.source.as_str(),
    ])?;
    let id = conn.last_insert_rowid();
    let mut st = conn.prepare_cached(
        "INSERT OR REPLACE INTO tags (result_id, key, value) VALUES (?1, ?2, ?3)",
    )?;
    for (k, v) in &r.tags {
        st.execute(params![id, k, v])?;
    }
    Ok(id)
}

#[cfg(test)]
mod tests;
