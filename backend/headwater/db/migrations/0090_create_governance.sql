-- Governance: classifications declared on datasets and their fields, those inherited along column
-- lineage (with the path they came by), policy violations, and how far the change log is applied.
-- Rows name datasets by uuid without foreign keys: datasets are never deleted (only marked
-- deleted), and inherited labels are rewritten in bulk, where key checks would cost (see 0060).

-- A declaration: a label (a level or a classifying tag) on a dataset (field_name '') or on one of
-- its fields, by source: 'api' (REST/GraphQL), 'facet' (a producer's tags facet or schema field
-- tags), 'tag' (a tag set through the tag API). A dataset's labels apply to each of its fields.
CREATE TABLE governance_declarations (
    dataset_uuid uuid        NOT NULL,
    field_name   text        NOT NULL,
    source       text        NOT NULL CHECK (source IN ('api', 'facet', 'tag')),
    label        text        NOT NULL,
    declared_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (dataset_uuid, field_name, source, label)
);

-- A label a field inherits through column lineage, with the path from the field that declares it
-- (a JSON array of {dataset, field, job} hops, the declaring field first).
CREATE TABLE governance_inherited (
    dataset_uuid uuid  NOT NULL,
    field_name   text  NOT NULL,
    label        text  NOT NULL,
    path         jsonb NOT NULL,
    PRIMARY KEY (dataset_uuid, field_name, label)
);

-- A rule broken by a field: open while cleared_at is null; the change-log rows that announced it.
CREATE TABLE governance_violations (
    violation_id      bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    rule              text        NOT NULL,
    dataset_uuid      uuid        NOT NULL,
    field_name        text        NOT NULL,
    label             text        NOT NULL,
    path              jsonb       NOT NULL,
    opened_at         timestamptz NOT NULL,
    opened_change_id  bigint,
    cleared_at        timestamptz,
    cleared_change_id bigint
);
CREATE UNIQUE INDEX governance_violations_open_key ON governance_violations (dataset_uuid, field_name, rule)
    WHERE cleared_at IS NULL;
CREATE INDEX governance_violations_opened_idx ON governance_violations (violation_id DESC)
    WHERE cleared_at IS NULL;

-- The last change-log id whose governance consequences are applied, and the policy they were
-- applied under; one row, locked by the worker applying the next changes (one server at a time).
CREATE TABLE governance_progress (
    singleton      boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    last_change_id bigint      NOT NULL DEFAULT 0,
    policy         text,
    updated_at     timestamptz NOT NULL DEFAULT now()
);
