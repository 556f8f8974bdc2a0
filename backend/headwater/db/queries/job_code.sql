-- name: fetch_code_of_runs
-- The SQL or source code each run of $1 reported in its job facets (`sql`: the query and its
-- dialect; `sourceCode`: the source and its language), from the run's latest stored event that
-- carries one. A run whose raw events are gone (retention) or never carried code has no row.
SELECT DISTINCT ON (run_uuid)
       run_uuid,
       coalesce(payload #>> '{job,facets,sql,query}',
                payload #>> '{job,facets,sourceCode,sourceCode}') AS code,
       CASE WHEN payload #>> '{job,facets,sql,query}' IS NOT NULL
            THEN coalesce(payload #>> '{job,facets,sql,dialect}', 'SQL')
            ELSE coalesce(payload #>> '{job,facets,sourceCode,language}', 'source')
       END AS language
FROM raw_events
WHERE run_uuid = ANY($1::uuid[])
  AND (payload #>> '{job,facets,sql,query}' IS NOT NULL
       OR payload #>> '{job,facets,sourceCode,sourceCode}' IS NOT NULL)
ORDER BY run_uuid, event_time DESC;
