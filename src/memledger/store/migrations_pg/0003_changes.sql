-- memledger PostgreSQL schema 3 (as SQLite's schema 10): recorded changes, so that a revocation, a forgotten event, a
-- correction or an extractor's rollback can be undone (memledger.domain.changes).
-- A change's body names, per family, the records it closed and opened (ids only).
-- change_causes maps the closed_by a revocation wrote on its records to its change.
CREATE TABLE change_sets (
    tenant mltext NOT NULL,
    change_id mltext NOT NULL,
    kind mltext NOT NULL,
    at mltext NOT NULL,
    reason mltext NOT NULL,
    body mltext NOT NULL,
    undone_by mltext,
    PRIMARY KEY (tenant, change_id)
);

CREATE TABLE change_causes (
    tenant mltext NOT NULL,
    cause mltext NOT NULL,
    change_id mltext NOT NULL,
    PRIMARY KEY (tenant, cause)
);

-- What an event (or any change) closed: an undo restores it.
CREATE INDEX records_closed_by ON records (tenant, closed_by) WHERE closed_by IS NOT NULL;
