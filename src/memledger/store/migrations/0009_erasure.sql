-- memledger schema 9: erasure and expiry. A tombstone per erased event (ids and the content hash,
-- no content) keeps a replay of it from being accepted again; an erasure row keeps the
-- receipt of each erasure (JSON: what it covered, by id, and each store's status).
CREATE TABLE tombstones (
    tenant TEXT NOT NULL,
    event_id TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    erasure_id TEXT NOT NULL,
    erased_at TEXT NOT NULL,
    PRIMARY KEY (tenant, event_id)
) WITHOUT ROWID;

CREATE TABLE erasures (
    tenant TEXT NOT NULL,
    erasure_id TEXT NOT NULL,
    requested_at TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (tenant, erasure_id)
);

CREATE INDEX mentions_event ON mentions (tenant, event_id);
CREATE INDEX jobs_event ON jobs (tenant, event_id);
CREATE INDEX review_event ON review_queue (tenant, event_id);
CREATE INDEX traces_subject ON traces (tenant, subject);

-- A record's expiry: it leaves every read at that record time and the next expiry
-- run erases it. Set from the claim (a TTL) and from the tenant's retention of its kind.
ALTER TABLE records ADD COLUMN expires_at TEXT;
CREATE INDEX records_expiry ON records (tenant, expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE retention (
    tenant TEXT NOT NULL,
    kind TEXT NOT NULL,
    days INTEGER NOT NULL,
    set_at TEXT NOT NULL,
    PRIMARY KEY (tenant, kind)
) WITHOUT ROWID;

-- Freshness: the extraction lag of recently finished jobs.
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;

-- Fair extraction: each tenant's queued jobs in order (the worker takes them a turn
-- at a time across tenants).
CREATE INDEX jobs_fair ON jobs (status, tenant, created_at, job_id);

-- Quotas per tenant (JSON: memledger.domain.quotas.Quotas), and the jobs a tenant
-- queued lately (jobs per minute).
CREATE TABLE quotas (
    tenant TEXT NOT NULL PRIMARY KEY,
    body TEXT NOT NULL,
    set_at TEXT NOT NULL
);
CREATE INDEX jobs_recent ON jobs (tenant, created_at);
