"""CI runs what the README tells a new user and a contributor to type, not more and not less."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _section(markdown: str, heading: str) -> str:
    start = markdown.index(f"\n## {heading}\n")
    end = markdown.find("\n## ", start + 1)
    return markdown[start : end if end != -1 else None]


def _commands(section: str) -> list[str]:
    """The shell commands of a section's ``sh`` blocks, split at ``&&``, comments dropped."""
    commands: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL):
        for line in block.splitlines():
            line = line.split("#", 1)[0].strip()
            commands += [part.strip() for part in line.split("&&") if part.strip()]
    return commands


def test_ci_runs_the_readme_install_and_test_commands() -> None:
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    ci_lines = [line.split("#", 1)[0].strip() for line in ci.splitlines()]

    start = _commands(_section(readme, "Start it"))[:2]  # then the set-up on a database of one's own
    tests = _commands(_section(readme, "Run the tests"))
    assert start == ["pip install -e '.[dev]'", "headwater serve"]
    assert tests[0] == start[0], "the test section installs what the start section installs"
    assert tests[-1] == "pytest"

    # Every command but serving appears in CI, pip and pytest exactly as a line of their own.
    for command in [c for c in start + tests if c != "headwater serve"]:
        if command.startswith(("pip ", "pytest")):
            assert command in ci_lines, f".ci/run does not run the README's `{command}`"
        else:
            assert any(command in line for line in ci_lines), f".ci/run does not run `{command}`"
    # ...and CI installs no Python package the README does not name.
    ci_installs = [line for line in ci_lines if re.match(r"(pip|uv|\S+/pip) ", line)]
    assert set(ci_installs) <= set(start + tests), f"CI installs more than the README: {ci_installs}"
