"""`headwater keys create|list|revoke`: API keys with scopes, in the database the server uses."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from headwater.access.keys import SCOPES, new_key
from headwater.command_base import CommandError
from headwater.store import api_keys as key_store

# Characters of a key's name: a line of `keys list`, not a document.
MAX_NAME_CHARS = 200


def _key_name(value: str) -> str:
    """An argparse type: what a key is for, which `keys list` shows to tell keys apart. Printable
    and short: a name holding terminal escape sequences would rewrite the screen of whoever lists
    the keys."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must say what the key is for, e.g. 'spark-prod'")
    if not value.isprintable():
        raise argparse.ArgumentTypeError(f"must be printable text, got {value!r}")
    if len(value.strip()) > MAX_NAME_CHARS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_NAME_CHARS} characters")
    return value.strip()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="create a key and print it (the only time it is shown)")
    create.add_argument(
        "--name", required=True, type=_key_name, help="what the key is for, e.g. 'spark-prod'"
    )
    create.add_argument(
        "--scope",
        dest="scopes",
        action="append",
        choices=SCOPES,
        required=True,
        help="repeatable: ingest (post events), read, write (mutations), admin (everything)",
    )
    listing = actions.add_parser("list", help="every key: id, name, scopes, created, revoked")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    revoke = actions.add_parser("revoke", help="revoke a key by its id (effective within seconds)")
    revoke.add_argument("key_id", metavar="KEY_ID")


def run_keys(args: argparse.Namespace) -> int:
    from headwater.command_base import apply_migrations, database, load_settings

    settings = load_settings()
    with database(settings.database_url, settings.data_dir) as url:
        asyncio.run(apply_migrations(url))
        return asyncio.run(_run(args, url))


async def _run(args: argparse.Namespace, url: str) -> int:
    from headwater.command_base import connect

    conn = await connect(url)
    try:
        if args.action == "create":
            key_id, key, secret_hash = new_key()
            scopes = sorted(set(args.scopes), key=SCOPES.index)
            await key_store.insert_api_key(conn, key_id, args.name, secret_hash, scopes)
            print(key)
            print(
                f"headwater: key {key_id} ({args.name}) with scopes {', '.join(scopes)}; "
                "it is shown only now: send it as 'Authorization: Bearer <key>'",
                file=sys.stderr,
            )
            return 0
        if args.action == "list":
            for k in await key_store.list_api_keys(conn):
                row = {
                    "id": k.key_id,
                    "name": k.name,
                    "scopes": list(k.scopes),
                    "created": k.created_at.isoformat(),
                    "revoked": k.revoked_at.isoformat() if k.revoked_at else None,
                }
                if args.json:
                    print(json.dumps(row))
                else:
                    state = f"revoked {row['revoked']}" if k.revoked_at else "active"
                    # A name stored before names had to be printable is shown escaped.
                    name = k.name if k.name.isprintable() else repr(k.name)
                    print(f"{k.key_id}  {name}  {','.join(k.scopes)}  created {row['created']}  {state}")
            return 0
        revoked = await key_store.revoke_api_key(conn, args.key_id)
        if revoked is None:
            raise CommandError(f"no key {args.key_id!r}; `headwater keys list` shows the ids")
        print(f"headwater: key {revoked.key_id} ({revoked.name}) is revoked", file=sys.stderr)
        return 0
    finally:
        await conn.close()
