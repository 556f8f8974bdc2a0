-- Tags on datasets, on dataset fields and on jobs. A field tag names the field rather than
-- referencing dataset_fields, so it survives the field leaving and coming back with a schema change.
CREATE TABLE dataset_tags (
    dataset_uuid uuid        NOT NULL REFERENCES datasets ON DELETE CASCADE,
    tag_uuid     uuid        NOT NULL REFERENCES tags ON DELETE CASCADE,
    tagged_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (dataset_uuid, tag_uuid)
);
CREATE INDEX dataset_tags_tag_idx ON dataset_tags (tag_uuid);

CREATE TABLE dataset_field_tags (
    dataset_uuid uuid        NOT NULL REFERENCES datasets ON DELETE CASCADE,
    field_name   text        NOT NULL,
    tag_uuid     uuid        NOT NULL REFERENCES tags ON DELETE CASCADE,
    tagged_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (dataset_uuid, field_name, tag_uuid)
);
CREATE INDEX dataset_field_tags_tag_idx ON dataset_field_tags (tag_uuid);

CREATE TABLE job_tags (
    job_uuid  uuid        NOT NULL REFERENCES jobs ON DELETE CASCADE,
    tag_uuid  uuid        NOT NULL REFERENCES tags ON DELETE CASCADE,
    tagged_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_uuid, tag_uuid)
);
CREATE INDEX job_tags_tag_idx ON job_tags (tag_uuid);
