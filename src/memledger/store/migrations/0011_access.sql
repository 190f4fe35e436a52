-- memledger schema 11: when reads last handed a memory out (memledger.read.access).
-- Ids and times only, no content. Recall's decay counts the time since a memory was
-- last touched: stated, stated again (mentions) or read (this table).
CREATE TABLE record_access (
    tenant TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    last_at TEXT NOT NULL,
    accesses INTEGER NOT NULL,
    PRIMARY KEY (tenant, memory_id)
) WITHOUT ROWID;
