-- Schema version 2: where a result came from (the command line, the daemon's records, an
-- import) and an index for `--host`.
ALTER TABLE results ADD COLUMN source TEXT NOT NULL DEFAULT 'cli';
CREATE INDEX results_server_host ON results (server_host, started_unix_ms);
CREATE INDEX results_client_host ON results (client_host, started_unix_ms);
