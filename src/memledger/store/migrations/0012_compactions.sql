-- memledger schema 12: episodic compaction (memledger.write.compact). A session summary
-- record covers episodes of one session; a covered episode leaves the derived index and
-- stays in the store. Closing or erasing a covered episode dissolves its summary.
CREATE TABLE compactions (
    tenant TEXT NOT NULL,
    summary_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    PRIMARY KEY (tenant, summary_id, memory_id)
) WITHOUT ROWID;

CREATE INDEX compactions_covered ON compactions (tenant, memory_id);
