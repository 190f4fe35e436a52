-- memledger schema 5: context traces (what a model call was given, by id and revision).

CREATE TABLE traces (
    tenant      TEXT NOT NULL,
    trace_id    TEXT NOT NULL,
    subject     TEXT,
    created_at  TEXT NOT NULL,
    rendered_sha256 TEXT NOT NULL,
    body        TEXT NOT NULL,  -- JSON: request, budgets, routing, items (ids, revisions), exclusions
    PRIMARY KEY (tenant, trace_id)
);
CREATE INDEX traces_recent ON traces (tenant, created_at);
