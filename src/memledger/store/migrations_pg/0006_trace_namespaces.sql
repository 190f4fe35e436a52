-- memledger PostgreSQL schema 6 (as SQLite's schema 13): the private namespaces a
-- trace's packet held memories of, written with the trace, so that a key that may not
-- read one of them finds no row (as for a missing trace). Each namespace is written
-- '|agent:<id>|', in order; '' when none. Existing traces get theirs from the records
-- they name that are still in the store.
ALTER TABLE traces ADD COLUMN namespaces mltext NOT NULL DEFAULT '';

UPDATE traces SET namespaces = COALESCE((
    SELECT string_agg(held, '' ORDER BY held) FROM (
        SELECT DISTINCT '|' || CASE
            WHEN strpos(substr(r.subject, 7), '/') > 0
            THEN substr(r.subject, 1, 5 + strpos(substr(r.subject, 7), '/'))
            ELSE r.subject
        END || '|' AS held
        FROM jsonb_array_elements(traces.body::text::jsonb -> 'items') AS item
        JOIN records AS r
            ON r.tenant = traces.tenant
            AND r.memory_id = item ->> 'memory_id'
        WHERE substr(r.subject, 1, 6) = 'agent:'
            AND length(r.subject) > 6
            AND substr(r.subject, 7, 1) <> '/'
    ) AS found
), '');
