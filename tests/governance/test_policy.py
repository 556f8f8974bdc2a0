"""The policy file's rules of reading, and the decisions the policy makes (no database)."""

from __future__ import annotations

import pytest

from headwater.errors import InvalidRequestError
from headwater.governance.policy import Policy, PolicyError, parse_policy

POLICY = parse_policy(
    {
        "rules": [
            {"name": "level", "max_level": "internal", "in_datasets_at": "public"},
            {"name": "where", "tag": "pii", "allowed_namespaces": ["postgres://warehouse:5432"]},
        ]
    }
)
PATH = [{"dataset": "dataset:ns:t", "field": "f", "job": None}]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"colour": "red"}, "unknown keys colour"),
        ({"levels": []}, "at least one level"),
        ({"levels": ["a", "a"]}, "distinct"),
        ({"tags": ["public"]}, "distinct"),
        ({"masking": {"functions": ["COUNT"]}}, "may only set aggregations and indirect"),
        ({"masking": {"indirect": "no"}}, "masking.indirect must be true or false"),
        ({"rules": {"name": "x"}}, "array of tables"),
        ({"rules": [{"name": "bad name!"}]}, "rules[0].name"),
        (
            {"rules": [{"name": "r", "max_level": "secret", "in_datasets_at": "public"}]},
            "max_level must be",
        ),
        ({"rules": [{"name": "r", "tag": "gdpr", "in_datasets_at": "public"}]}, "tag must be one of"),
        ({"rules": [{"name": "r", "tag": "pii"}]}, "must have either"),
        (
            {"rules": [{"name": "r", "tag": "pii", "allowed_namespaces": "x"}]},
            "list of non-empty strings",
        ),
        ({"rules": [{"name": "r", "tag": "pii", "in_datasets_at": "x"}] * 2}, "in_datasets_at must be"),
        (
            {"rules": [{"name": "r", "tag": "pii", "in_datasets_at": "public"}] * 2},
            "rule names must be unique",
        ),
    ],
)
def test_a_wrong_policy_is_refused_naming_the_problem(document, message):
    with pytest.raises(PolicyError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_policy(document)


def test_producer_tags_classify_by_key_and_value():
    policy = Policy()
    assert policy.label_of_tag("pii", "true") == "pii"
    assert policy.label_of_tag("PII", None) == "pii"  # a tag named like a label
    assert policy.label_of_tag("pii", "false") is None
    assert policy.label_of_tag("classification", "Confidential") == "confidential"
    assert policy.label_of_tag("owner", "@alice") is None
    assert policy.label_of_tag("classification", "secret") is None


def test_what_masks():
    policy = Policy()
    assert policy.masks("DIRECT", "TRANSFORMATION", "sha2(email)", True)
    assert policy.masks("INDIRECT", "FILTER", None, None)
    assert policy.masks("DIRECT", "AGGREGATION", "count(DISTINCT email)", None)
    assert not policy.masks("DIRECT", "AGGREGATION", "counter(email)", None)  # not COUNT
    assert not policy.masks("DIRECT", "AGGREGATION", "max(email)", None)
    assert not policy.masks("DIRECT", "IDENTITY", None, False)
    assert not policy.masks(None, None, None, None)
    assert not parse_policy({"masking": {"indirect": False}}).masks("INDIRECT", "JOIN", None, None)


def test_rules():
    assert POLICY.violations("s3://lake", "public", {"confidential": PATH})[0].rule == "level"
    assert POLICY.violations("s3://lake", "internal", {"confidential": PATH}) == []  # not public
    assert POLICY.violations("s3://lake", None, {"restricted": PATH}) == []  # no declared level
    assert POLICY.violations("s3://lake", "public", {"internal": PATH}) == []  # not above internal
    (where,) = POLICY.violations("s3://lake", None, {"pii": PATH})
    assert (where.rule, where.label, where.path) == ("where", "pii", PATH)
    assert POLICY.violations("postgres://warehouse:5432", None, {"pii": PATH}) == []


def test_api_labels_are_checked():
    assert Policy().check_label(" PII ") == "pii"
    with pytest.raises(InvalidRequestError, match="levels are public, internal"):
        Policy().check_label("secret")
