-- API keys with scopes. Only the SHA-256 of a key's secret is kept: a key is 32 random bytes, so a
-- fast hash is as safe as a slow one, and a lookup costs one index probe. `key_id` is the public
-- part of the key (`hw_<key_id>_<secret>`), shown by `headwater keys list` and used to revoke it.
CREATE TABLE api_keys (
    key_id      text        PRIMARY KEY,
    name        text        NOT NULL,
    secret_hash bytea       NOT NULL,
    scopes      text[]      NOT NULL CHECK (scopes <@ ARRAY['ingest', 'read', 'write', 'admin']
                                            AND cardinality(scopes) > 0),
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);
