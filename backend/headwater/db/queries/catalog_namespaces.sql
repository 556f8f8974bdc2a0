-- name: list_namespaces
-- Every namespace with its creation time and when something in it last changed, by name.
SELECT n.name, n.created_at,
       greatest(n.created_at,
                (SELECT max(d.updated_at) FROM datasets d WHERE d.namespace = n.name),
                (SELECT max(j.updated_at) FROM jobs j WHERE j.namespace = n.name)) AS updated_at
FROM namespaces n
ORDER BY n.name;

-- name: fetch_namespaces_by_names
-- The namespaces with the given names (the same shape as list_namespaces).
SELECT n.name, n.created_at,
       greatest(n.created_at,
                (SELECT max(d.updated_at) FROM datasets d WHERE d.namespace = n.name),
                (SELECT max(j.updated_at) FROM jobs j WHERE j.namespace = n.name)) AS updated_at
FROM namespaces n
WHERE n.name = ANY($1::text[]);
