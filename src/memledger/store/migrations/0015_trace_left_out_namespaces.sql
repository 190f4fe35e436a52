-- memledger schema 15: a trace's private namespaces are those of every memory it names,
-- held or left out with a reason (a packet across the tenant names the memories it left
-- out), so that a key that may not read one of them finds no row. Existing traces get
-- theirs again from the records they name that are still in the store.
UPDATE traces SET namespaces = COALESCE((
    SELECT group_concat(held, '') FROM (
        SELECT DISTINCT '|' || CASE
            WHEN instr(substr(r.subject, 7), '/') > 0
            THEN substr(r.subject, 1, 5 + instr(substr(r.subject, 7), '/'))
            ELSE r.subject
        END || '|' AS held
        FROM (
            SELECT json_extract(item.value, '$.memory_id') AS memory_id
            FROM json_each(traces.body, '$.items') AS item
            UNION
            SELECT json_extract(left_out.value, '$.key')
            FROM json_each(traces.body, '$.excluded') AS left_out
            WHERE json_extract(left_out.value, '$.section') = 'memories'
        ) AS named
        JOIN records AS r
            ON r.tenant = traces.tenant
            AND r.memory_id = named.memory_id
        WHERE substr(r.subject, 1, 6) = 'agent:'
            AND length(r.subject) > 6
            AND substr(r.subject, 7, 1) <> '/'
        ORDER BY held
    )
), '');
