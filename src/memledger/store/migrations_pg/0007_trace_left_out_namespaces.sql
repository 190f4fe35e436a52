-- memledger PostgreSQL schema 7 (as SQLite's schema 15): a trace's private namespaces
-- are those of every memory it names, held or left out with a reason, so that a key
-- that may not read one of them finds no row. Existing traces get theirs again from
-- the records they name that are still in the store.
UPDATE traces SET namespaces = COALESCE((
    SELECT string_agg(held, '' ORDER BY held) FROM (
        SELECT DISTINCT '|' || CASE
            WHEN strpos(substr(r.subject, 7), '/') > 0
            THEN substr(r.subject, 1, 5 + strpos(substr(r.subject, 7), '/'))
            ELSE r.subject
        END || '|' AS held
        FROM (
            SELECT item ->> 'memory_id' AS memory_id
            FROM jsonb_array_elements(traces.body::text::jsonb -> 'items') AS item
            UNION
            SELECT left_out ->> 'key'
            FROM jsonb_array_elements(traces.body::text::jsonb -> 'excluded') AS left_out
            WHERE left_out ->> 'section' = 'memories'
        ) AS named
        JOIN records AS r
            ON r.tenant = traces.tenant
            AND r.memory_id = named.memory_id
        WHERE substr(r.subject, 1, 6) = 'agent:'
            AND length(r.subject) > 6
            AND substr(r.subject, 7, 1) <> '/'
    ) AS found
), '');
