-- memledger PostgreSQL schema 5 (as SQLite's schema 12): episodic compaction
-- (memledger.write.compact). A session summary record covers episodes of one session.
CREATE TABLE compactions (
    tenant mltext NOT NULL,
    summary_id mltext NOT NULL,
    memory_id mltext NOT NULL,
    PRIMARY KEY (tenant, summary_id, memory_id)
);

CREATE INDEX compactions_covered ON compactions (tenant, memory_id);
