-- Schema version 1: one row per saved result (its whole JSON document plus the columns
-- that `history list` filters and sorts on), and its tags.
CREATE TABLE results (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,               -- 'run' (RunResult) or 'sweep' (SweepResult)
    started_unix_ms INTEGER NOT NULL, -- the result's own start
    saved_unix_ms INTEGER NOT NULL,
    title TEXT,
    workload TEXT,                    -- stream, rr, crr, udp_rr, udp_stream
    status TEXT,
    client_host TEXT,
    server_host TEXT,
    kernel TEXT,                      -- the client's kernel release
    throughput_bps REAL,              -- median over the runs, receiver side, all directions
    transactions_per_s REAL,
    rtt_p50_ns REAL,
    rtt_p99_ns REAL,
    document TEXT NOT NULL            -- the whole RunResult / SweepResult JSON
);
CREATE INDEX results_started ON results (started_unix_ms);
CREATE INDEX results_workload ON results (workload, started_unix_ms);
CREATE TABLE tags (
    result_id INTEGER NOT NULL REFERENCES results (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (result_id, key)
);
CREATE INDEX tags_key_value ON tags (key, value);
