-- memledger schema 10: recorded changes, so that a revocation, a forgotten event, a
-- correction or an extractor's rollback can be undone (memledger.domain.changes).
-- A change's body names, per family, the records it closed and opened (ids only).
-- change_causes maps the closed_by a revocation wrote on its records to its change.
CREATE TABLE change_sets (
    tenant TEXT NOT NULL,
    change_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    at TEXT NOT NULL,
    reason TEXT NOT NULL,
    body TEXT NOT NULL,
    undone_by TEXT,
    PRIMARY KEY (tenant, change_id)
) WITHOUT ROWID;

CREATE TABLE change_causes (
    tenant TEXT NOT NULL,
    cause TEXT NOT NULL,
    change_id TEXT NOT NULL,
    PRIMARY KEY (tenant, cause)
) WITHOUT ROWID;

-- What an event (or any change) closed: an undo restores it.
CREATE INDEX records_closed_by ON records (tenant, closed_by) WHERE closed_by IS NOT NULL;
