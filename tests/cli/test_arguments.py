"""Arguments and settings a command cannot use: an error naming the option or variable and what
it may be, never a traceback from the place the value would not fit (a LIMIT, a bigint, a date,
a pool)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.cli.running import HEADWATER

UNREACHABLE = "postgresql://postgres@127.0.0.1:1/headwater"  # refused before anything is done
BACKWARDS = ["--since", "2030-01-01T00:00:00Z", "--until", "2020-01-01T00:00:00Z"]


@pytest.mark.parametrize(
    ("args", "code", "expected"),
    [
        (["dead-letters", "list", "--limit", "-1"], 2, "argument --limit: must be 1 or more, got -1"),
        (["dead-letters", "list", "--limit", "x"], 2, "argument --limit: not an integer: 'x'"),
        (
            ["dead-letters", "replay", "--id", "99999999999999999999"],
            2,
            "argument --id: must be at most 9,223,372,036,854,775,807, got 99999999999999999999",
        ),
        (
            ["dead-letters", "purge", "--before", "10000-01-01T00:00:00Z"],
            2,
            "argument --before: '10000-01-01T00:00:00Z' ",
        ),
        (["dead-letters", "list", "--before", "yesterday"], 2, "argument --before: 'yesterday' "),
        (["dead-letters", "purge"], 2, "purge needs --id, --topic or --before, or --all"),
        (["dead-letters", "purge", "--all", "--id", "1"], 2, "purge takes --all, or a selection"),
        (["spark", "backfill", "--batch-size", "0", "a"], 2, "argument --batch-size: must be 1 or more"),
        (["retention", "--keep", "99999999999"], 2, "argument --keep: must be at most 36,500, got"),
        (["retention", "--keep", "0"], 2, "argument --keep: must be 1 or more, got 0"),
        # int() reads other scripts' digits: ٣ is 3 to it, and no number to a user.
        (["retention", "--keep", "\u0663"], 2, "argument --keep: not an integer: '\u0663'"),
        (
            ["retention", "--keep", "30", "--batch-size", "99999999999999999999"],
            2,
            "argument --batch-size: must be at most 1,000,000",
        ),
        (["import", "marquez", "--from", UNREACHABLE, "--batch-size", "0"], 2, "must be 1 or more"),
        (
            ["consume", "--bootstrap-servers", "::::", "--topic", "t"],
            2,
            "a bootstrap server is HOST:PORT, e.g. kafka:9092, got '::::'",
        ),
        (
            ["consume", "--bootstrap-servers", "k:9092", "--topic", "t", "--batch-size", "0"],
            2,
            "the batch size must be 1 to 100000, got 0",
        ),
        (
            ["consume", "--bootstrap-servers", "k:9092", "--topic", "t", "--metrics-port", "99999"],
            2,
            "the metrics port must be 1 to 65535, got 99999",
        ),
        (
            ["consume", "--bootstrap-servers", "k:9092", "--topic", "t", "--group", " "],
            2,
            "the consumer group must not be empty",
        ),
        (["keys", "create", "--name", " ", "--scope", "read"], 2, "argument --name: must say what"),
        (
            ["keys", "create", "--name", "\x1b[31mred", "--scope", "read"],
            2,
            "argument --name: must be printable text, got '\\x1b[31mred'",
        ),
        (
            ["spark", "export", "--format", "ndjson", "out", *BACKWARDS],
            2,
            "--since (2030-01-01T00:00:00+00:00) must be before --until (2020-01-01T00:00:00+00:00)",
        ),
        (
            ["import", "marquez", "--from", UNREACHABLE, *BACKWARDS],
            2,
            "--since (2030-01-01T00:00:00+00:00)",
        ),
        (
            ["spark", "export", "--format", "parquet", "out", "--compression", "bogus"],
            2,
            "--compression 'bogus' is not a codec for parquet: none, uncompressed, snappy",
        ),
    ],
)
def test_an_argument_out_of_range_is_named_with_its_bounds(
    tmp_path: Path, args: list[str], code: int, expected: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADWATER_")}
    env["HEADWATER_DATABASE_URL"] = UNREACHABLE
    done = subprocess.run(
        [HEADWATER, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert expected in done.stderr.splitlines()[-1], done.stderr


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("HEADWATER_POOL_MAX_SIZE", "0", "HEADWATER_POOL_MAX_SIZE must be 1 to 2,147,483,647, got 0"),
        (
            "HEADWATER_POOL_MIN_SIZE",
            "20",
            "HEADWATER_POOL_MIN_SIZE (20) must be at most HEADWATER_POOL_MAX_SIZE (10)",
        ),
        (
            "HEADWATER_MAX_BODY_BYTES",
            "-5",
            "HEADWATER_MAX_BODY_BYTES must be 1 to 2,147,483,647, got -5",
        ),
        ("HEADWATER_RETRY_AFTER_S", "-1", "HEADWATER_RETRY_AFTER_S must be 0 to 2,147,483,647, got -1"),
        (
            "HEADWATER_MAX_LINEAGE_NODES",
            "0",
            "HEADWATER_MAX_LINEAGE_NODES must be 1 to 2,147,483,647, got 0",
        ),
        (
            "HEADWATER_STATEMENT_TIMEOUT_MS",
            "99999999999999",
            "HEADWATER_STATEMENT_TIMEOUT_MS must be 0 to 2,147,483,647, got 99999999999999",
        ),
        ("HEADWATER_PORT", "70000", "HEADWATER_PORT must be 1 to 65,535, got 70000"),
        (
            "HEADWATER_ALIAS_RULES_FILE",
            "/nonexistent/rules.json",
            "Cannot read alias rules from /nonexistent/rules.json",
        ),
        (
            "HEADWATER_ALIAS_RULES_FILE",
            "{tmp}/deep.json",
            "Cannot read alias rules from {tmp}/deep.json",
        ),
        (
            "HEADWATER_POLICIES",
            "{tmp}/deep.toml",
            "policy file {tmp}/deep.toml: nested too deeply to read",
        ),
    ],
)
def test_serve_refuses_a_setting_out_of_range_in_one_line(
    tmp_path: Path, variable: str, value: str, expected: str
) -> None:
    (tmp_path / "deep.json").write_text("[" * 100_000)
    (tmp_path / "deep.toml").write_text("a = " + "[" * 100_000 + "]" * 100_000)
    value, expected = value.format(tmp=tmp_path), expected.format(tmp=tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADWATER_")}
    env.update(HEADWATER_DATABASE_URL=UNREACHABLE, HEADWATER_DATABASE_WAIT_S="0", **{variable: value})
    done = subprocess.run(
        [HEADWATER, "serve", "--port", "1"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(f"headwater: {expected}"), done.stderr
