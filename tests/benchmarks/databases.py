"""The PostgreSQL server the benchmarks run on, and the URL of a database on it by name.

``HEADWATER_BENCH_SERVER_URL`` names the server and a database to administer it from (default
postgresql://postgres@127.0.0.1:5432/postgres). A unix socket works as well, e.g.
``postgresql://postgres@/postgres?host=/var/run/postgresql``: each benchmark's databases are then
reached the same way, and so is PostgreSQL by the servers the benchmarks start.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from headwater.db.migrate import migrate

SERVER_URL = os.environ.get(
    "HEADWATER_BENCH_SERVER_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def database_url(name: str, server_url: str = SERVER_URL) -> str:
    """``server_url`` on database ``name``: its path replaced, the rest (user, host, a socket's
    ``?host=``) kept."""
    return urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))


async def recreate_database(admin: asyncpg.Connection, name: str) -> str:
    """Database ``name`` dropped if it exists (sessions on it ended) and created empty, from the
    server connection ``admin``; its URL."""
    await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await admin.execute(f'CREATE DATABASE "{name}"')
    return database_url(name)


async def fresh_database(name: str) -> str:
    """Database ``name`` dropped if it exists, created again and migrated; its URL."""
    admin = await asyncpg.connect(SERVER_URL)
    try:
        url = await recreate_database(admin, name)
    finally:
        await admin.close()
    conn = await asyncpg.connect(url)
    try:
        await migrate(conn)
    finally:
        await conn.close()
    return url
