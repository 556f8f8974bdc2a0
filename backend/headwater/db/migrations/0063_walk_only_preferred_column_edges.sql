-- A superseded column edge (the less trusted source's edge into an output: a producer naming fields
-- the output does not have, or SQL-derived edges the producer's replace) is kept for comparison but
-- is not lineage. The walks skip it and still read partial indexes alone, in both directions.
DROP INDEX column_lineage_open_input_idx;
CREATE INDEX column_lineage_open_input_idx ON column_lineage (input_dataset_uuid, input_field)
    INCLUDE (output_dataset_uuid, output_field) WHERE valid_to IS NULL AND NOT superseded;
CREATE INDEX column_lineage_open_output_idx ON column_lineage (output_dataset_uuid, output_field)
    INCLUDE (input_dataset_uuid, input_field) WHERE valid_to IS NULL AND NOT superseded;
