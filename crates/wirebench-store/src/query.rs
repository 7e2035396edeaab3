//! Selecting stored results: one [`Filter`] turned into one SQL statement with bound
//! parameters (never text pasted into SQL).

use rusqlite::types::Value;
use rusqlite::Connection;

use crate::{Headline, Row, StoreError};

/// Which results to select. Empty fields select everything; set fields must all match.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Only these ids (any of them).
    pub ids: Vec<i64>,
    /// Started at or after this instant, ms since the epoch.
    pub since_unix_ms: Option<i64>,
    /// Started before this instant, ms since the epoch.
    pub before_unix_ms: Option<i64>,
    /// This workload.
    pub workload: Option<String>,
    /// Each of these tags.
    pub tags: Vec<(String, String)>,
    /// This host at either end (client or server).
    pub host: Option<String>,
    /// This kind (`run`, `sweep`).
    pub kind: Option<String>,
    /// At most this many (after ordering).
    pub limit: Option<usize>,
    /// The order.
    pub order: Order,
}

/// The order of selected results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Order {
    /// Newest start first.
    #[default]
    NewestFirst,
    /// Oldest start first.
    OldestFirst,
}

/// The WHERE clause, ORDER and LIMIT of a filter, with its parameters.
fn clause(f: &Filter) -> (String, Vec<Value>) {
    let mut conds: Vec<String> = Vec::new();
    let mut args: Vec<Value> = Vec::new();
    if !f.ids.is_empty() {
        let marks = vec!["?"; f.ids.len()].join(",");
        conds.push(format!("r.id IN ({marks})"));
        args.extend(f.ids.iter().map(|&i| Value::Integer(i)));
    }
    if let Some(t) = f.since_unix_ms {
        conds.push("r.started_unix_ms >= ?".into());
        args.push(Value::Integer(t));
    }
    if let Some(t) = f.before_unix_ms {
        conds.push("r.started_unix_ms < ?".into());
        args.push(Value::Integer(t));
    }
    if let Some(w) = &f.workload {
        conds.push("r.workload = ?".into());
        args.push(Value::Text(w.clone()));
    }
    if let Some(h) = &f.host {
        conds.push("(r.client_host = ? OR r.server_host = ?)".into());
        args.push(Value::Text(h.clone()));
        args.push(Value::Text(h.clone()));
    }
    if let Some(k) = &f.kind {
        conds.push("r.kind = ?".into());
        args.push(Value::Text(k.clone()));
    }
    for (k, v) in &f.tags {
        // IN (…) lets SQLite start from the tag's index (the matching results) instead of
        // probing every result in time order: 357 → see docs/HISTORY.md for the timing.
        conds.push(
            "r.id IN (SELECT t.result_id FROM tags t WHERE t.key = ? AND t.value = ?)".into(),
        );
        args.push(Value::Text(k.clone()));
        args.push(Value::Text(v.clone()));
    }
    let mut sql = String::new();
    if !conds.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&conds.join(" AND "));
    }
    sql.push_str(match f.order {
        Order::NewestFirst => " ORDER BY r.started_unix_ms DESC, r.id DESC",
        Order::OldestFirst => " ORDER BY r.started_unix_ms ASC, r.id ASC",
    });
    if let Some(n) = f.limit {
        sql.push_str(" LIMIT ?");
        args.push(Value::Integer(i64::try_from(n).unwrap_or(i64::MAX)));
    }
    (sql, args)
}

/// The selected ids.
pub(crate) fn ids(conn: &Connection, f: &Filter) -> Result<Vec<i64>, StoreError> {
    let (tail, args) = clause(f);
    let mut st = conn.prepare(&format!("SELECT r.id FROM results r{tail}"))?;
    let rows = st.query_map(rusqlite::params_from_iter(args), |r| r.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The selected rows with their tags.
pub(crate) fn list(conn: &Connection, f: &Filter) -> Result<Vec<Row>, StoreError> {
    let (tail, args) = clause(f);
    let mut st = conn.prepare(&format!(
        "SELECT r.id, r.kind, r.started_unix_ms, r.title, r.workload, r.status, r.client_host,
                r.server_host, r.kernel, r.throughput_bps, r.transactions_per_s, r.rtt_p50_ns,
                r.rtt_p99_ns, r.source
         FROM results r{tail}"
    ))?;
    let mut rows: Vec<Row> = st
        .query_map(rusqlite::params_from_iter(args), |r| {
            Ok(Row {
                id: r.get(0)?,
                kind: r.get(1)?,
                started_unix_ms: r.get(2)?,
                title: r.get(3)?,
                workload: r.get(4)?,
                status: r.get(5)?,
                client_host: r.get(6)?,
                server_host: r.get(7)?,
                kernel: r.get(8)?,
                figures: Headline {
                    throughput_bps: r.get(9)?,
                    transactions_per_s: r.get(10)?,
                    rtt_p50_ns: r.get(11)?,
                    rtt_p99_ns: r.get(12)?,
                },
                source: r.get(13)?,
                tags: Vec::new(),
            })
        })?
        .collect::<Result<_, _>>()?;
    let mut tags =
        conn.prepare_cached("SELECT key, value FROM tags WHERE result_id = ?1 ORDER BY key")?;
    for row in &mut rows {
        row.tags = tags
            .query_map([row.id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
    }
    Ok(rows)
}
