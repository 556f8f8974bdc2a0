-- The column lineage walk over open edges, index-only in both directions: downstream from an input
-- field to its outputs (upstream uses column_lineage_open_key, which leads with the output field).
CREATE INDEX column_lineage_open_input_idx ON column_lineage (input_dataset_uuid, input_field)
    INCLUDE (output_dataset_uuid, output_field) WHERE valid_to IS NULL;
