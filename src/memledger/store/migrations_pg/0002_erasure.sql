-- memledger PostgreSQL schema 2: erasure and expiry (as SQLite's schema 9). A tombstone per erased
-- event (ids and the content hash, no content) keeps a replay of it from being accepted
-- again; an erasure row keeps each erasure's receipt (JSON, ids only).
CREATE TABLE tombstones (
    tenant mltext NOT NULL,
    event_id mltext NOT NULL,
    content_hash mltext NOT NULL,
    erasure_id mltext NOT NULL,
    erased_at mltext NOT NULL,
    PRIMARY KEY (tenant, event_id)
);

CREATE TABLE erasures (
    tenant mltext NOT NULL,
    erasure_id mltext NOT NULL,
    requested_at mltext NOT NULL,
    body mltext NOT NULL,
    PRIMARY KEY (tenant, erasure_id)
);

CREATE INDEX mentions_event ON mentions (tenant, event_id);
CREATE INDEX jobs_event ON jobs (tenant, event_id);
CREATE INDEX review_event ON review_queue (tenant, event_id);
CREATE INDEX traces_subject ON traces (tenant, subject);

ALTER TABLE records ADD COLUMN expires_at mltext;
CREATE INDEX records_expiry ON records (tenant, expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE retention (
    tenant mltext NOT NULL,
    kind mltext NOT NULL,
    days BIGINT NOT NULL,
    set_at mltext NOT NULL,
    PRIMARY KEY (tenant, kind)
);

-- Freshness: the extraction lag of recently finished jobs.
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;

-- Quotas per tenant (JSON: memledger.domain.quotas.Quotas), and the jobs a tenant
-- queued lately (jobs per minute).
CREATE TABLE quotas (
    tenant mltext NOT NULL PRIMARY KEY,
    body mltext NOT NULL,
    set_at mltext NOT NULL
);
CREATE INDEX jobs_recent ON jobs (tenant, created_at);
