-- The lineage model: namespaces, sources, datasets (with aliases, fields and versions), jobs (with
-- versions), runs (with state history and the datasets they touched) and column lineage.
-- Datasets and jobs share one node_id sequence so lineage_edges can be two bigints per edge.

CREATE SEQUENCE lineage_node_ids;

CREATE TABLE namespaces (
    namespace_uuid uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    name           text        NOT NULL UNIQUE,
    created_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sources (
    source_uuid uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    name        text        NOT NULL UNIQUE,
    uri         text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE datasets (
    dataset_uuid         uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    node_id              bigint      NOT NULL UNIQUE DEFAULT nextval('lineage_node_ids'),
    namespace            text        NOT NULL,
    name                 text        NOT NULL,
    source_name          text,
    description          text,
    facets               jsonb       NOT NULL DEFAULT '{}',
    facets_at            timestamptz,
    fields_at            timestamptz,
    current_version_uuid uuid,
    current_version_at   timestamptz,
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL,
    deleted_at           timestamptz,
    heat                 double precision,
    UNIQUE (namespace, name)
);
CREATE INDEX datasets_name_trgm_idx ON datasets (lower(name) text_pattern_ops);

-- Every other identity a dataset is known by (symlinks facet, alias rules), and its own identity.
CREATE TABLE dataset_aliases (
    namespace    text        NOT NULL,
    name         text        NOT NULL,
    dataset_uuid uuid        NOT NULL REFERENCES datasets,
    alias_type   text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, name)
);
CREATE INDEX dataset_aliases_dataset_uuid_idx ON dataset_aliases (dataset_uuid);

-- The current schema of a dataset (from the latest schema facet seen by eventTime).
CREATE TABLE dataset_fields (
    dataset_uuid uuid NOT NULL REFERENCES datasets,
    name         text NOT NULL,
    type         text,
    description  text,
    position     int  NOT NULL,
    PRIMARY KEY (dataset_uuid, name)
);

-- A version per distinct (schema, producer-reported version); each write is a run_datasets row.
CREATE TABLE dataset_versions (
    dataset_version_uuid uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    dataset_uuid         uuid        NOT NULL REFERENCES datasets,
    version              text        NOT NULL,
    schema_fields        jsonb,
    storage_version      text,
    created_by_run_uuid  uuid,
    created_at           timestamptz NOT NULL,
    UNIQUE (dataset_uuid, version)
);

CREATE TABLE jobs (
    job_uuid             uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    node_id              bigint      NOT NULL UNIQUE DEFAULT nextval('lineage_node_ids'),
    namespace            text        NOT NULL,
    name                 text        NOT NULL,
    parent_job_uuid      uuid        REFERENCES jobs,
    job_type             text,
    description          text,
    facets               jsonb       NOT NULL DEFAULT '{}',
    facets_at            timestamptz,
    current_version_uuid uuid,
    current_version_at   timestamptz,
    latest_run_uuid      uuid,
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL,
    deleted_at           timestamptz,
    heat                 double precision,
    UNIQUE (namespace, name)
);
CREATE INDEX jobs_name_trgm_idx ON jobs (lower(name) text_pattern_ops);
CREATE INDEX jobs_parent_job_uuid_idx ON jobs (parent_job_uuid);

-- A version per distinct (inputs, outputs, source code / SQL) of a job.
CREATE TABLE job_versions (
    job_version_uuid uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    job_uuid         uuid        NOT NULL REFERENCES jobs,
    version          text        NOT NULL,
    input_uuids      uuid[]      NOT NULL,
    output_uuids     uuid[]      NOT NULL,
    code_hash        text,
    created_by_run_uuid uuid,
    created_at       timestamptz NOT NULL,
    UNIQUE (job_uuid, version)
);

CREATE TABLE runs (
    run_uuid            uuid        PRIMARY KEY,
    job_uuid            uuid        NOT NULL REFERENCES jobs,
    job_version_uuid    uuid        REFERENCES job_versions,
    parent_run_uuid     uuid,
    root_run_uuid       uuid,
    current_state       text,
    current_state_at    timestamptz,
    started_at          timestamptz,
    ended_at            timestamptz,
    nominal_start_time  timestamptz,
    nominal_end_time    timestamptz,
    error_message       text,
    error_language      text,
    error_stack_trace   text,
    facets              jsonb       NOT NULL DEFAULT '{}',
    facets_at           timestamptz,
    warnings            jsonb       NOT NULL DEFAULT '[]',
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL
);
CREATE INDEX runs_job_uuid_idx ON runs (job_uuid, created_at DESC);
CREATE INDEX runs_parent_run_uuid_idx ON runs (parent_run_uuid);

-- Every state event of a run, by eventTime; the run's current_state is derived from it.
CREATE TABLE run_states (
    run_uuid   uuid        NOT NULL REFERENCES runs,
    state      text        NOT NULL,
    event_time timestamptz NOT NULL,
    PRIMARY KEY (run_uuid, event_time, state)
);

-- The datasets a run read or wrote, merged over all its events, with the version read/written.
CREATE TABLE run_datasets (
    run_uuid             uuid        NOT NULL REFERENCES runs,
    dataset_uuid         uuid        NOT NULL REFERENCES datasets,
    direction            text        NOT NULL CHECK (direction IN ('INPUT', 'OUTPUT')),
    dataset_version_uuid uuid        REFERENCES dataset_versions,
    first_seen_at        timestamptz NOT NULL,
    last_seen_at         timestamptz NOT NULL,
    PRIMARY KEY (run_uuid, direction, dataset_uuid)
);
CREATE INDEX run_datasets_dataset_idx ON run_datasets (dataset_uuid, direction);
