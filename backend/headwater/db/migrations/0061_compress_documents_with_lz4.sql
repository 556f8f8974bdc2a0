-- Event payloads and facet documents are a few KiB each and rewritten by every event that reports
-- them; LZ4 compresses them several times faster than the default pglz for about the same size.
-- A server built without LZ4 keeps pglz.
DO $$
DECLARE
    target text;
BEGIN
    FOREACH target IN ARRAY ARRAY['raw_events.payload', 'datasets.facets', 'jobs.facets', 'runs.facets',
                                  'dataset_versions.schema_fields', 'change_log.details'] LOOP
        EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET COMPRESSION lz4',
                       split_part(target, '.', 1), split_part(target, '.', 2));
    END LOOP;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'LZ4 is not available: documents stay compressed with pglz';
END
$$;
