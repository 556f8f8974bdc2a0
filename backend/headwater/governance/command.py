"""`headwater governance apply|policy`: apply the change log's governance now, check a policy file.

`serve` applies governance as changes arrive; `apply` does the same work at once and says what it
did, for scripts, tests and a database filled while no server ran (an import, a restore).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import asdict
from pathlib import Path

from headwater.command_base import CommandError
from headwater.governance.policy import Policy, PolicyError, load_policy


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    apply = actions.add_parser(
        "apply", help="apply every change not applied yet: inherited classifications, violations"
    )
    apply.add_argument(
        "--policies", type=Path, default=None, help="the policy file (default: HEADWATER_POLICIES)"
    )
    check = actions.add_parser("policy", help="check a policy file and print it as the server reads it")
    check.add_argument("file", type=Path, help="the policy file (TOML)")


def policy_or_error(path: Path | None) -> Policy:
    try:
        return load_policy(path)
    except PolicyError as exc:
        raise CommandError(str(exc)) from None


def run_governance(args: argparse.Namespace) -> int:
    if args.action == "policy":
        print(json.dumps(policy_or_error(args.file).describe(), indent=2))
        return 0
    from headwater.command_base import apply_migrations, database, load_settings

    settings = load_settings()
    policy = policy_or_error(args.policies or settings.policies_file)
    with database(settings.database_url, settings.data_dir) as url:
        asyncio.run(apply_migrations(url))
        return asyncio.run(_apply(url, policy))


async def _apply(url: str, policy: Policy) -> int:
    from headwater.command_base import connect
    from headwater.db.pool import register_codecs
    from headwater.governance.propagation import apply_pending

    conn = await connect(url)
    try:
        await register_codecs(conn)
        outcome = await apply_pending(conn, policy)
    finally:
        await conn.close()
    print(json.dumps(asdict(outcome)))
    return 0
