-- Raw event payloads go back to LZ4 (0085 chose pglz for size alone). Measured on the ingest
-- benchmark's 5,000 events, as text: inserting them costs PostgreSQL 315-336 ms with pglz against
-- 142-152 ms with LZ4 (about 7% of ingest's PostgreSQL time per event), for 1,134 against 1,178 bytes
-- per event; written by ingest, the stores came out at 1,624 and 1,627 bytes per event. Rows stored
-- so far keep their compression (each value says which it is). A server built without LZ4 keeps
-- pglz. Setting it on the parent does not reach the partitions, so each is set; partitions made
-- later take the parent's.
DO $$
DECLARE
    rel record;
BEGIN
    FOR rel IN SELECT relid::regclass AS name FROM pg_partition_tree('raw_events') LOOP
        EXECUTE format('ALTER TABLE %s ALTER COLUMN payload SET COMPRESSION lz4', rel.name);
    END LOOP;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'LZ4 is not available: raw event payloads stay compressed with pglz';
END
$$;
