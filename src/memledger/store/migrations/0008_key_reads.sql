-- memledger schema 8: the other agents' namespaces an API key may read
-- (JSON: sorted list of "agent:<id>"; see memledger.domain.keys).
ALTER TABLE api_keys ADD COLUMN reads TEXT NOT NULL DEFAULT '[]';
