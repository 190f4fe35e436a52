-- memledger PostgreSQL schema 1: the same tables as SQLite's schema 8, in one step.
-- Every table a tenant's data lives in has the tenant first in its primary key, and
-- every query filters by it, so the tables can be distributed by tenant (Citus:
-- SELECT create_distributed_table('events', 'tenant'), and so on; api_keys is read by
-- key id alone and would be a reference table). Times are fixed-width UTC text, as in
-- SQLite (memledger.domain.records.format_time): they sort as instants. Text compares
-- byte by byte (collation "C") whatever the database's locale, as it does in SQLite.

CREATE DOMAIN mltext AS text COLLATE "C";

CREATE TABLE events (
    tenant mltext NOT NULL,
    event_id mltext NOT NULL,
    content_hash mltext NOT NULL,
    subject mltext NOT NULL,
    actor_id mltext NOT NULL,
    actor_authenticated INTEGER NOT NULL,
    actor_grants mltext NOT NULL,
    channel mltext NOT NULL,
    stream mltext,
    sequence BIGINT,
    occurred_at mltext NOT NULL,
    text mltext NOT NULL,
    metadata mltext NOT NULL,
    ingested_at mltext NOT NULL,
    role mltext,
    PRIMARY KEY (tenant, event_id)
);
CREATE INDEX events_subject_time ON events (tenant, subject, occurred_at);

CREATE TABLE event_outcomes (
    tenant mltext NOT NULL,
    event_id mltext NOT NULL,
    outcome mltext NOT NULL,
    receipt mltext NOT NULL,
    decided_at mltext NOT NULL,
    PRIMARY KEY (tenant, event_id)
);

CREATE TABLE families (
    tenant mltext NOT NULL,
    subject mltext NOT NULL,
    family mltext NOT NULL,
    revision BIGINT NOT NULL,
    generation BIGINT NOT NULL,
    position mltext,
    updated_at mltext,
    PRIMARY KEY (tenant, subject, family)
);

CREATE TABLE records (
    tenant mltext NOT NULL,
    memory_id mltext NOT NULL,
    subject mltext NOT NULL,
    family mltext NOT NULL,
    scope mltext NOT NULL,
    kind mltext NOT NULL,
    proposed_kind mltext NOT NULL,
    claim mltext NOT NULL,
    value mltext NOT NULL,
    status mltext NOT NULL,
    source_event_id mltext NOT NULL,
    source_actor_id mltext NOT NULL,
    source_channel mltext NOT NULL,
    source_identity_authenticated INTEGER NOT NULL,
    scope_authorized INTEGER NOT NULL,
    claim_faithful_to_source INTEGER NOT NULL,
    operational_setting_confirmed INTEGER NOT NULL,
    recorded_at mltext NOT NULL,
    superseded_at mltext,
    closed_by mltext,
    valid_from mltext NOT NULL,
    valid_until mltext,
    revision BIGINT NOT NULL,
    generation BIGINT NOT NULL,
    confidence DOUBLE PRECISION NOT NULL,
    grounding mltext,
    extractor mltext NOT NULL,
    supersedes mltext,
    exclusion mltext,
    mentions BIGINT NOT NULL DEFAULT 1,
    trust DOUBLE PRECISION NOT NULL DEFAULT 0.5,
    PRIMARY KEY (tenant, memory_id)
);
CREATE INDEX records_family ON records (tenant, subject, family, superseded_at);
CREATE INDEX records_source ON records (tenant, source_event_id);

-- Append-only; seq only grows. History of one family is written under its slot's lock,
-- so within a family seq is commit order.
CREATE TABLE history (
    seq BIGINT GENERATED ALWAYS AS IDENTITY,
    tenant mltext NOT NULL,
    subject mltext NOT NULL,
    family mltext NOT NULL,
    revision BIGINT NOT NULL,
    generation BIGINT NOT NULL,
    action mltext NOT NULL,
    memory_id mltext NOT NULL,
    status mltext NOT NULL,
    at mltext NOT NULL,
    cause mltext NOT NULL,
    note mltext,
    PRIMARY KEY (tenant, seq)
);
CREATE INDEX history_family ON history (tenant, subject, family, seq);

-- Rows are inserted just before commit under one lock, so seq is commit order and a
-- reader that tails by seq never skips a row that commits later with a smaller one.
CREATE TABLE outbox (
    seq BIGINT GENERATED ALWAYS AS IDENTITY,
    tenant mltext NOT NULL,
    memory_id mltext NOT NULL,
    subject mltext NOT NULL,
    family mltext NOT NULL,
    revision BIGINT NOT NULL,
    generation BIGINT NOT NULL,
    op mltext NOT NULL,
    created_at mltext NOT NULL,
    processed_at mltext,
    PRIMARY KEY (tenant, seq)
);
CREATE INDEX outbox_seq ON outbox (seq);

CREATE TABLE revoked_sources (
    tenant mltext NOT NULL,
    subject mltext NOT NULL,
    family mltext NOT NULL,
    event_id mltext NOT NULL,
    generation BIGINT NOT NULL,
    PRIMARY KEY (tenant, subject, family, event_id)
);

CREATE TABLE review_queue (
    tenant mltext NOT NULL,
    review_id mltext NOT NULL,
    event_id mltext NOT NULL,
    subject mltext NOT NULL,
    reason mltext NOT NULL,
    claims mltext NOT NULL,
    created_at mltext NOT NULL,
    resolved_at mltext,
    resolution mltext,
    resolved_by mltext,
    resolution_reason mltext,
    extractor mltext,
    job_id mltext,
    generations mltext,
    revocation_mark BIGINT,
    PRIMARY KEY (tenant, review_id)
);

CREATE TABLE jobs (
    tenant mltext NOT NULL,
    job_id mltext NOT NULL,
    event_id mltext NOT NULL,
    generations mltext NOT NULL,
    status mltext NOT NULL,
    attempts BIGINT NOT NULL,
    last_error mltext,
    created_at mltext NOT NULL,
    finished_at mltext,
    next_attempt_at mltext,
    lease_until mltext,
    lease_owner mltext,
    revocation_mark BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, job_id)
);
CREATE INDEX jobs_status ON jobs (tenant, status, created_at);
-- The queue workers claim from (FOR UPDATE SKIP LOCKED), per tenant, oldest first.
CREATE INDEX jobs_queued ON jobs (tenant, created_at, job_id) WHERE status = 'queued';

CREATE TABLE mentions (
    tenant mltext NOT NULL,
    memory_id mltext NOT NULL,
    event_id mltext NOT NULL,
    at mltext NOT NULL,
    PRIMARY KEY (tenant, memory_id, event_id)
);

CREATE TABLE counters (
    tenant mltext NOT NULL,
    name mltext NOT NULL,
    count BIGINT NOT NULL,
    PRIMARY KEY (tenant, name)
);

CREATE TABLE revocations (
    tenant mltext NOT NULL,
    n BIGINT NOT NULL,
    subject mltext NOT NULL,
    family mltext NOT NULL,
    generation BIGINT NOT NULL,
    at mltext NOT NULL,
    PRIMARY KEY (tenant, n)
);
CREATE INDEX revocations_family ON revocations (tenant, subject, family, n);

CREATE TABLE forgotten_events (
    tenant mltext NOT NULL,
    event_id mltext NOT NULL,
    at mltext NOT NULL,
    reason mltext NOT NULL,
    PRIMARY KEY (tenant, event_id)
);

CREATE TABLE traces (
    tenant mltext NOT NULL,
    trace_id mltext NOT NULL,
    subject mltext,
    created_at mltext NOT NULL,
    rendered_sha256 mltext NOT NULL,
    body mltext NOT NULL,
    PRIMARY KEY (tenant, trace_id)
);
CREATE INDEX traces_recent ON traces (tenant, created_at);

CREATE TABLE gate_decisions (
    tenant mltext NOT NULL,
    decision_id mltext NOT NULL,
    trace_id mltext,
    decided_at mltext NOT NULL,
    action mltext NOT NULL,
    allowed INTEGER NOT NULL,
    body mltext NOT NULL,
    arrival BIGINT GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (tenant, decision_id)
);
CREATE INDEX gate_by_trace ON gate_decisions (tenant, trace_id);

CREATE TABLE api_keys (
    key_id mltext PRIMARY KEY,
    tenant mltext NOT NULL,
    actor_id mltext NOT NULL,
    principal mltext NOT NULL,
    role mltext NOT NULL,
    grants mltext NOT NULL,
    label mltext NOT NULL,
    token_hash mltext NOT NULL,
    created_at mltext NOT NULL,
    revoked_at mltext,
    last_used_at mltext,
    reads mltext NOT NULL DEFAULT '[]'
);
CREATE INDEX api_keys_tenant ON api_keys (tenant, created_at);

CREATE TABLE tenant_families (
    tenant mltext NOT NULL,
    name mltext NOT NULL,
    kinds mltext NOT NULL,
    description mltext NOT NULL,
    own_say INTEGER NOT NULL,
    registered_at mltext NOT NULL,
    PRIMARY KEY (tenant, name)
);
