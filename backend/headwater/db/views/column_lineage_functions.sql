-- Helpers of the column lineage queries (re-created after every migrate).

-- The column edges leaving the frontier fields (parallel arrays of dataset uuid and field name):
-- downstream from an input field to the output fields computed from it, upstream from an output
-- field to its input fields; open edges, or those valid at as_of, never superseded ones. Returns
-- (from, to) fields. Inlined into the walks; only the branch for the asked direction and time runs,
-- and the open-edge branches read covering partial indexes alone.
DROP FUNCTION IF EXISTS column_lineage_neighbours(uuid[], text[], boolean, timestamptz);
CREATE FUNCTION column_lineage_neighbours(
    frontier_datasets uuid[], frontier_fields text[], downstream boolean, as_of timestamptz
)
RETURNS TABLE (from_dataset uuid, from_field text, to_dataset uuid, to_field text)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT c.input_dataset_uuid, c.input_field, c.output_dataset_uuid, c.output_field
    FROM unnest(frontier_datasets, frontier_fields) AS f(ds, field)
    JOIN column_lineage c ON c.input_dataset_uuid = f.ds AND c.input_field = f.field AND c.valid_to IS NULL
         AND NOT c.superseded
    WHERE downstream AND as_of IS NULL
    UNION ALL
    SELECT c.input_dataset_uuid, c.input_field, c.output_dataset_uuid, c.output_field
    FROM unnest(frontier_datasets, frontier_fields) AS f(ds, field)
    JOIN column_lineage c ON c.input_dataset_uuid = f.ds AND c.input_field = f.field
    WHERE downstream AND as_of IS NOT NULL
      AND c.valid_from <= as_of AND (c.valid_to IS NULL OR c.valid_to > as_of) AND NOT c.superseded
    UNION ALL
    SELECT c.output_dataset_uuid, c.output_field, c.input_dataset_uuid, c.input_field
    FROM unnest(frontier_datasets, frontier_fields) AS f(ds, field)
    JOIN column_lineage c ON c.output_dataset_uuid = f.ds AND c.output_field = f.field AND c.valid_to IS NULL
         AND NOT c.superseded
    WHERE NOT downstream AND as_of IS NULL
    UNION ALL
    SELECT c.output_dataset_uuid, c.output_field, c.input_dataset_uuid, c.input_field
    FROM unnest(frontier_datasets, frontier_fields) AS f(ds, field)
    JOIN column_lineage c ON c.output_dataset_uuid = f.ds AND c.output_field = f.field
    WHERE NOT downstream AND as_of IS NOT NULL
      AND c.valid_from <= as_of AND (c.valid_to IS NULL OR c.valid_to > as_of) AND NOT c.superseded
$$;
