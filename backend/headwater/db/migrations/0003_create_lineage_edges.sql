-- The graph the lineage engine walks: dataset -> job (the job reads it) and job -> dataset (the job
-- writes it). An edge is open (valid_to IS NULL) while the job's latest version still has it; a
-- completed run of a newer version without it closes it at that run's eventTime. A closed edge that
-- comes back is a new row, so each row is one validity interval.
CREATE TABLE lineage_edges (
    edge_id       bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    src_node_id   bigint      NOT NULL,
    dst_node_id   bigint      NOT NULL,
    job_uuid      uuid        NOT NULL REFERENCES jobs,
    dataset_uuid  uuid        NOT NULL REFERENCES datasets,
    edge_type     text        NOT NULL CHECK (edge_type IN ('READ', 'WRITE')),
    manual        boolean     NOT NULL DEFAULT false,
    first_seen_at timestamptz NOT NULL,
    last_seen_at  timestamptz NOT NULL,
    valid_from    timestamptz NOT NULL,
    valid_to      timestamptz,
    last_run_uuid uuid
);
-- At most one open interval per edge.
CREATE UNIQUE INDEX lineage_edges_open_key ON lineage_edges (src_node_id, dst_node_id) WHERE valid_to IS NULL;
-- The walk: forwards and backwards over open edges, index-only.
CREATE INDEX lineage_edges_open_src_idx ON lineage_edges (src_node_id) INCLUDE (dst_node_id) WHERE valid_to IS NULL;
CREATE INDEX lineage_edges_open_dst_idx ON lineage_edges (dst_node_id) INCLUDE (src_node_id) WHERE valid_to IS NULL;
-- Point-in-time walks and closing a job's edges.
CREATE INDEX lineage_edges_src_time_idx ON lineage_edges (src_node_id, valid_from, valid_to) INCLUDE (dst_node_id);
CREATE INDEX lineage_edges_dst_time_idx ON lineage_edges (dst_node_id, valid_from, valid_to) INCLUDE (src_node_id);
CREATE INDEX lineage_edges_job_idx ON lineage_edges (job_uuid) WHERE valid_to IS NULL;

-- Column lineage: output field <- input field, through a job, with the same validity intervals.
-- derived = computed by Headwater from the job's SQL rather than reported by the producer.
CREATE TABLE column_lineage (
    column_edge_id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    output_dataset_uuid    uuid        NOT NULL REFERENCES datasets,
    output_field           text        NOT NULL,
    input_dataset_uuid     uuid        NOT NULL REFERENCES datasets,
    input_field            text        NOT NULL,
    job_uuid               uuid        REFERENCES jobs,
    transformation_type    text,
    transformation_subtype text,
    description            text,
    masking                boolean,
    derived                boolean     NOT NULL DEFAULT false,
    first_seen_at          timestamptz NOT NULL,
    last_seen_at           timestamptz NOT NULL,
    valid_from             timestamptz NOT NULL,
    valid_to               timestamptz,
    last_run_uuid          uuid
);
CREATE UNIQUE INDEX column_lineage_open_key ON column_lineage
    (output_dataset_uuid, output_field, input_dataset_uuid, input_field,
     coalesce(job_uuid, '00000000-0000-0000-0000-000000000000'::uuid),
     coalesce(transformation_type, ''), coalesce(transformation_subtype, ''), derived)
    WHERE valid_to IS NULL;
CREATE INDEX column_lineage_output_idx ON column_lineage (output_dataset_uuid, output_field);
CREATE INDEX column_lineage_input_idx ON column_lineage (input_dataset_uuid, input_field);
