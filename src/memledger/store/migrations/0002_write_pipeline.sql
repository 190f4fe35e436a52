-- memledger schema 2: the write pipeline. Mention counts and trust on records, the
-- independent mentions behind a NOOP, job leases and retry times, rejection counters.

ALTER TABLE records ADD COLUMN mentions INTEGER NOT NULL DEFAULT 1;
ALTER TABLE records ADD COLUMN trust REAL NOT NULL DEFAULT 0.5;

CREATE TABLE mentions (
    tenant TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (tenant, memory_id, event_id)
) WITHOUT ROWID;

ALTER TABLE jobs ADD COLUMN next_attempt_at TEXT;
ALTER TABLE jobs ADD COLUMN lease_until TEXT;
ALTER TABLE jobs ADD COLUMN lease_owner TEXT;

CREATE INDEX jobs_queue ON jobs (status, created_at, job_id);

CREATE TABLE counters (
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (tenant, name)
) WITHOUT ROWID;

CREATE INDEX events_subject_time ON events (tenant, subject, occurred_at);
