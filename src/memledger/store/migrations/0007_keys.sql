-- memledger schema 7: the service's API keys, claim families registered per tenant,
-- and review decisions (who resolved a held batch, why, and what the batch needs to
-- be committed later: its extractor, job and the revocations it started after).

-- A key's id is public and unique across tenants (authentication learns the tenant
-- from it). Only a hash of the token is kept: sha256$<hex> over mlk_<id>.<secret>,
-- where the secret is 256 random bits (see memledger.domain.keys).
CREATE TABLE api_keys (
    key_id       TEXT PRIMARY KEY,
    tenant       TEXT NOT NULL,
    actor_id     TEXT NOT NULL,
    principal    TEXT NOT NULL,  -- user | agent | service
    role         TEXT NOT NULL,  -- read | write | admin
    grants       TEXT NOT NULL,  -- JSON [family, scope] pairs, as events store them
    label        TEXT NOT NULL,
    token_hash   TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    revoked_at   TEXT,
    last_used_at TEXT
);
CREATE INDEX api_keys_tenant ON api_keys (tenant, created_at);

CREATE TABLE tenant_families (
    tenant        TEXT NOT NULL,
    name          TEXT NOT NULL,
    kinds         TEXT NOT NULL,  -- JSON: sorted list of kinds
    description   TEXT NOT NULL,
    own_say       INTEGER NOT NULL,
    registered_at TEXT NOT NULL,
    PRIMARY KEY (tenant, name)
) WITHOUT ROWID;

ALTER TABLE review_queue ADD COLUMN resolved_by TEXT;
ALTER TABLE review_queue ADD COLUMN resolution_reason TEXT;
ALTER TABLE review_queue ADD COLUMN extractor TEXT;
ALTER TABLE review_queue ADD COLUMN job_id TEXT;
ALTER TABLE review_queue ADD COLUMN generations TEXT;
ALTER TABLE review_queue ADD COLUMN revocation_mark INTEGER;

-- Who decided a review and why, on the history entries it leaves in each family.
ALTER TABLE history ADD COLUMN note TEXT;
