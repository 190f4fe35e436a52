-- memledger schema 1: ledger, family slots, records, history, outbox, review queue, jobs.
-- Wide rows live in rowid tables (appends stay local; the primary key is a narrow index);
-- narrow lookup tables are WITHOUT ROWID.
-- Times are fixed-width UTC text (see memledger.domain.records.format_time): they sort as instants.

CREATE TABLE events (
    tenant TEXT NOT NULL,
    event_id TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    subject TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    actor_authenticated INTEGER NOT NULL,
    actor_grants TEXT NOT NULL,
    channel TEXT NOT NULL,
    stream TEXT,
    sequence INTEGER,
    occurred_at TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL,
    ingested_at TEXT NOT NULL,
    PRIMARY KEY (tenant, event_id)
);

CREATE TABLE event_outcomes (
    tenant TEXT NOT NULL,
    event_id TEXT NOT NULL,
    outcome TEXT NOT NULL,
    receipt TEXT NOT NULL,
    decided_at TEXT NOT NULL,
    PRIMARY KEY (tenant, event_id)
);

CREATE TABLE families (
    tenant TEXT NOT NULL,
    subject TEXT NOT NULL,
    family TEXT NOT NULL,
    revision INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    position TEXT,
    updated_at TEXT,
    PRIMARY KEY (tenant, subject, family)
) WITHOUT ROWID;

CREATE TABLE records (
    tenant TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    subject TEXT NOT NULL,
    family TEXT NOT NULL,
    scope TEXT NOT NULL,
    kind TEXT NOT NULL,
    proposed_kind TEXT NOT NULL,
    claim TEXT NOT NULL,
    value TEXT NOT NULL,
    status TEXT NOT NULL,
    source_event_id TEXT NOT NULL,
    source_actor_id TEXT NOT NULL,
    source_channel TEXT NOT NULL,
    source_identity_authenticated INTEGER NOT NULL,
    scope_authorized INTEGER NOT NULL,
    claim_faithful_to_source INTEGER NOT NULL,
    operational_setting_confirmed INTEGER NOT NULL,
    recorded_at TEXT NOT NULL,
    superseded_at TEXT,
    closed_by TEXT,
    valid_from TEXT NOT NULL,
    valid_until TEXT,
    revision INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    confidence REAL NOT NULL,
    grounding TEXT,
    extractor TEXT NOT NULL,
    supersedes TEXT,
    exclusion TEXT,
    PRIMARY KEY (tenant, memory_id)
);

CREATE INDEX records_family ON records (tenant, subject, family, superseded_at);
CREATE INDEX records_source ON records (tenant, source_event_id);

CREATE TABLE history (
    seq INTEGER PRIMARY KEY,  -- append-only and never deleted, so rowids only grow
    tenant TEXT NOT NULL,
    subject TEXT NOT NULL,
    family TEXT NOT NULL,
    revision INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    action TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    status TEXT NOT NULL,
    at TEXT NOT NULL,
    cause TEXT NOT NULL
);

CREATE INDEX history_family ON history (tenant, subject, family, seq);

CREATE TABLE outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    subject TEXT NOT NULL,
    family TEXT NOT NULL,
    revision INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    op TEXT NOT NULL,
    created_at TEXT NOT NULL,
    processed_at TEXT
);

CREATE INDEX outbox_pending ON outbox (tenant, processed_at, seq);

CREATE TABLE revoked_sources (
    tenant TEXT NOT NULL,
    subject TEXT NOT NULL,
    family TEXT NOT NULL,
    event_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    PRIMARY KEY (tenant, subject, family, event_id)
) WITHOUT ROWID;

CREATE TABLE review_queue (
    tenant TEXT NOT NULL,
    review_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    subject TEXT NOT NULL,
    reason TEXT NOT NULL,
    claims TEXT NOT NULL,
    created_at TEXT NOT NULL,
    resolved_at TEXT,
    resolution TEXT,
    PRIMARY KEY (tenant, review_id)
);

CREATE TABLE jobs (
    tenant TEXT NOT NULL,
    job_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    generations TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    last_error TEXT,
    created_at TEXT NOT NULL,
    finished_at TEXT,
    PRIMARY KEY (tenant, job_id)
);

CREATE INDEX jobs_status ON jobs (tenant, status, created_at);
