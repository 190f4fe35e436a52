-- memledger schema 3: hardening.
-- Revocations as a per-tenant log: a job notes the newest entry when it is queued, and
-- a claim it carries about any subject is stale if that subject's family was revoked after.
-- Forgotten source events: nothing derived from them is written again, in any family.
-- Grants are stored structured (JSON [family, scope] pairs) from now on; older rows keep
-- their "family:scope" text and are read with the same rules as new ones.

CREATE TABLE revocations (
    tenant TEXT NOT NULL,
    n INTEGER NOT NULL,
    subject TEXT NOT NULL,
    family TEXT NOT NULL,
    generation INTEGER NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (tenant, n)
) WITHOUT ROWID;

CREATE INDEX revocations_family ON revocations (tenant, subject, family, n);

ALTER TABLE jobs ADD COLUMN revocation_mark INTEGER NOT NULL DEFAULT 0;

CREATE TABLE forgotten_events (
    tenant TEXT NOT NULL,
    event_id TEXT NOT NULL,
    at TEXT NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (tenant, event_id)
) WITHOUT ROWID;

-- A tenant's outbox rows in order: a recall brings the index up to date for its own
-- tenant only, so one tenant's writes never slow another's reads.
CREATE INDEX outbox_tenant ON outbox (tenant, seq);
