-- name: fetch_code_of_runs
-- The SQL or source code each run of $1 reported in its job facets (`sql`: the query and its
-- dialect; `sourceCode`: the source and its language), from the run's latest stored event that
-- carries one. A run whose raw events are gone (retention) or never carried code has no row.
SELECT DISTINCT ON (run_uuid)
       run_uuid,
       coalesce(query, source) AS code,
       CASE WHEN query IS NOT NULL THEN coalesce(dialect, 'SQL') ELSE coalesce(language, 'source') END
           AS language
FROM (
    -- The payload is text: parsed once per event of these runs (OFFSET 0 keeps the subquery from
    -- being merged into the outer one, which would parse it once per field).
    SELECT e.run_uuid, e.event_time,
           j.doc #>> '{job,facets,sql,query}' AS query,
           j.doc #>> '{job,facets,sql,dialect}' AS dialect,
           j.doc #>> '{job,facets,sourceCode,sourceCode}' AS source,
           j.doc #>> '{job,facets,sourceCode,language}' AS language
    FROM raw_events e
    CROSS JOIN LATERAL (SELECT e.payload::jsonb AS doc OFFSET 0) j
    WHERE e.run_uuid = ANY($1::uuid[])
) c
WHERE query IS NOT NULL OR source IS NOT NULL
ORDER BY run_uuid, event_time DESC;
