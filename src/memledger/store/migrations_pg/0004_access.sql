-- memledger PostgreSQL schema 4 (as SQLite's schema 11): when reads last handed a memory
-- out (memledger.read.access). Ids and times only, no content.
CREATE TABLE record_access (
    tenant mltext NOT NULL,
    memory_id mltext NOT NULL,
    last_at mltext NOT NULL,
    accesses bigint NOT NULL,
    PRIMARY KEY (tenant, memory_id)
);
