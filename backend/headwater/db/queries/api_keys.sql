-- name: insert_api_key
-- A new key ($1 id, $2 name, $3 SHA-256 of its secret, $4 scopes).
INSERT INTO api_keys (key_id, name, secret_hash, scopes) VALUES ($1, $2, $3, $4)
RETURNING key_id, name, scopes, created_at, revoked_at;

-- name: list_api_keys
-- Every key, newest first, revoked ones too (never their secrets).
SELECT key_id, name, scopes, created_at, revoked_at FROM api_keys ORDER BY created_at DESC, key_id;

-- name: revoke_api_key
-- Revokes the key $1; returns it, or nothing when there is no such key.
UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE key_id = $1
RETURNING key_id, name, scopes, created_at, revoked_at;

-- name: fetch_active_api_key
-- The scopes of the key $1 whose secret hashes to $2, unless revoked.
SELECT scopes, secret_hash FROM api_keys WHERE key_id = $1 AND revoked_at IS NULL;

-- name: count_active_api_keys
-- How many keys are not revoked: with none (and no HEADWATER_API_KEY) the server is open.
SELECT count(*) FROM api_keys WHERE revoked_at IS NULL;
