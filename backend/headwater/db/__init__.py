"""PostgreSQL access: pool, migrations and the named SQL queries."""
