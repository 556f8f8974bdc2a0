"""`headwater governance policy|apply`, and serve refusing a wrong policy file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from headwater.governance.propagation import OWN_KINDS
from tests.governance import pipeline as p
from tests.governance.conftest import Governed
from tests.server import REPO

pytestmark = pytest.mark.db


def headwater(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HEADWATER_")}
    return subprocess.run(
        [sys.executable, "-m", "headwater.cli", *args],
        env={**clean, **(env or {})},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_policy_prints_a_good_file_and_names_what_is_wrong_in_a_bad_one(
    policy_file: Path, tmp_path: Path
):
    done = headwater("governance", "policy", str(policy_file))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rules"][0] == {
        "name": "no-pii-in-public",
        "tag": "pii",
        "allowedNamespaces": None,
        "inDatasetsAt": "public",
    }
    bad = tmp_path / "bad.toml"
    bad.write_text('[[rules]]\nname = "r"\nmax_level = "secret"\nin_datasets_at = "public"\n')
    done = headwater("governance", "policy", str(bad))
    assert done.returncode != 0
    assert "rule 'r': max_level must be one of public, internal, confidential, restricted" in done.stderr
    bad.write_text("levels = [\n")
    done = headwater("governance", "policy", str(bad))
    assert done.returncode != 0
    assert f"policy file {bad}" in done.stderr
    done = headwater("governance", "policy", str(tmp_path / "missing.toml"))
    assert done.returncode != 0
    assert "cannot read the policy file" in done.stderr


def test_serve_refuses_a_wrong_policy_file(tmp_path: Path):
    bad = tmp_path / "bad.toml"
    bad.write_text('colour = "red"\n')
    done = headwater(
        "serve", env={"HEADWATER_POLICIES": str(bad), "HEADWATER_DATABASE_URL": "postgresql://x/y"}
    )
    assert done.returncode != 0
    assert "unknown keys colour" in done.stderr


async def test_apply_applies_what_is_pending_and_says_what_it_did(governed: Governed, policy_file: Path):
    await governed.post(p.upstream())
    env = {"HEADWATER_DATABASE_URL": governed.url, "HEADWATER_POLICIES": str(policy_file)}
    done = headwater("governance", "apply", env=env)
    assert done.returncode == 0, done.stderr
    # The server's worker may have applied some of it already: together they applied it all. It
    # goes on meanwhile, over the changes governance itself writes (classifications, violations),
    # which leave nothing to do: the progress it records may be past the answer, over those alone.
    outcome = json.loads(done.stdout)
    await _only_governance_changes_after(governed, outcome["last_change_id"])
    assert (await governed.labels(p.CONTACTS))["email"] == ["pii"]
    again = json.loads(headwater("governance", "apply", env=env).stdout)
    assert again["changes_read"] == 0
    assert again["last_change_id"] >= outcome["last_change_id"]
    await _only_governance_changes_after(governed, again["last_change_id"])


async def _only_governance_changes_after(governed: Governed, answered: int) -> None:
    """The progress recorded is the answer, or past it over changes governance wrote itself."""
    recorded = await governed.pool.fetchval("SELECT last_change_id FROM governance_progress")
    assert recorded >= answered
    kinds = await governed.pool.fetch(
        "SELECT DISTINCT kind FROM change_log WHERE change_id > $1 AND change_id <= $2",
        answered,
        recorded,
    )
    assert {r["kind"] for r in kinds} <= OWN_KINDS
