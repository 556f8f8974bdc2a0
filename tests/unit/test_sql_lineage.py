"""SQL lineage: the fixture corpus case by case, errors with positions, dialect names, the CLI."""

from __future__ import annotations

import pytest

from headwater.sql_lineage import extract_lineage
from tests.fixtures.sql.cases import Case, load_cases

CASES = load_cases()


def _param(case: Case) -> object:
    marks = [pytest.mark.xfail(reason=case.xfail, strict=True)] if case.xfail else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_corpus_case(case: Case) -> None:
    result = extract_lineage(case.sql, case.dialect, case.schema)
    assert result.errors == []
    assert result.to_dict() == case.expected
