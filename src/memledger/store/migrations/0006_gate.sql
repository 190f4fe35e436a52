-- memledger schema 6: action gate decisions (what a consequential action was allowed on).

CREATE TABLE gate_decisions (
    tenant       TEXT NOT NULL,
    decision_id  TEXT NOT NULL,
    trace_id     TEXT,
    decided_at   TEXT NOT NULL,
    action       TEXT NOT NULL,
    allowed      INTEGER NOT NULL,
    body         TEXT NOT NULL,  -- JSON: each check's verdict, source and observed_at
    PRIMARY KEY (tenant, decision_id)
);
CREATE INDEX gate_by_trace ON gate_decisions (tenant, trace_id);
