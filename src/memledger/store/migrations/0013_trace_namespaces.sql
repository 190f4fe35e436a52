-- memledger schema 13: the private namespaces a trace's packet held memories of, written
-- with the trace, so that a key that may not read one of them finds no row (as for a
-- missing trace). Each namespace is written '|agent:<id>|', in order; '' when none.
-- Existing traces get theirs from the records they name that are still in the store.
ALTER TABLE traces ADD COLUMN namespaces TEXT NOT NULL DEFAULT '';

UPDATE traces SET namespaces = COALESCE((
    SELECT group_concat(held, '') FROM (
        SELECT DISTINCT '|' || CASE
            WHEN instr(substr(r.subject, 7), '/') > 0
            THEN substr(r.subject, 1, 5 + instr(substr(r.subject, 7), '/'))
            ELSE r.subject
        END || '|' AS held
        FROM json_each(traces.body, '$.items') AS item
        JOIN records AS r
            ON r.tenant = traces.tenant
            AND r.memory_id = json_extract(item.value, '$.memory_id')
        WHERE substr(r.subject, 1, 6) = 'agent:'
            AND length(r.subject) > 6
            AND substr(r.subject, 7, 1) <> '/'
        ORDER BY held
    )
), '');
