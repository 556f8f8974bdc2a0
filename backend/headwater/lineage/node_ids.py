"""Node ids as the REST and GraphQL APIs spell them: ``dataset:NS:NAME``, ``job:NS:NAME`` and,
for column lineage, ``datasetField:NS:DATASET:FIELD``.

Namespaces contain ``://`` and ``:port`` and names may contain ``:`` too, so the split between
namespace and name is not knowable from the text alone: every split is a candidate, and the store
says which one exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from headwater.errors import InvalidNodeIdError

NodeType = Literal["DATASET", "JOB"]
_PREFIXES: dict[str, NodeType] = {"dataset": "DATASET", "job": "JOB"}


@dataclass(frozen=True)
class ParsedNodeId:
    """A node id split into its type and every plausible (namespace, name) pair."""

    raw: str
    node_type: NodeType
    candidates: list[tuple[str, str]]


def parse_node_id(node_id: str) -> ParsedNodeId:
    """Split ``dataset:NS:NAME`` / ``job:NS:NAME``; raise InvalidNodeIdError naming the problem."""
    prefix, sep, rest = node_id.partition(":")
    if not sep or prefix not in _PREFIXES:
        raise InvalidNodeIdError(
            f"Invalid node id '{node_id}': expected 'dataset:NAMESPACE:NAME' or 'job:NAMESPACE:NAME'."
        )
    candidates = split_candidates(rest)
    if not candidates:
        raise InvalidNodeIdError(
            f"Invalid node id '{node_id}': expected a namespace and a name after '{prefix}:'."
        )
    return ParsedNodeId(node_id, _PREFIXES[prefix], candidates)


def split_candidates(rest: str) -> list[tuple[str, str]]:
    """Every (namespace, name) split of ``rest`` at a colon, with both parts non-empty."""
    out = []
    for i, ch in enumerate(rest):
        if ch == ":" and 0 < i < len(rest) - 1:
            out.append((rest[:i], rest[i + 1 :]))
    return out


def format_node_id(node_type: NodeType, namespace: str, name: str) -> str:
    """The id of a dataset or job node."""
    return f"{node_type.lower()}:{namespace}:{name}"


@dataclass(frozen=True)
class ParsedFieldId:
    """A ``datasetField:NS:DATASET:FIELD`` id and every plausible (namespace, dataset, field) split."""

    raw: str
    candidates: list[tuple[str, str, str]]


FIELD_PREFIX = "datasetField"


def parse_field_id(node_id: str) -> ParsedFieldId:
    """Split ``datasetField:NS:DATASET:FIELD``; raise InvalidNodeIdError naming the problem."""
    prefix, sep, rest = node_id.partition(":")
    if not sep or prefix != FIELD_PREFIX:
        raise InvalidNodeIdError(
            f"Invalid node id '{node_id}': expected 'datasetField:NAMESPACE:DATASET:FIELD' or 'dataset:NAMESPACE:NAME'."
        )
    candidates = [
        (namespace, dataset, field)
        for namespace, tail in split_candidates(rest)
        for dataset, field in split_candidates(tail)
    ]
    if not candidates:
        raise InvalidNodeIdError(
            f"Invalid node id '{node_id}': expected a namespace, a dataset and a field after 'datasetField:'."
        )
    return ParsedFieldId(node_id, candidates)


def format_field_id(namespace: str, dataset: str, field: str) -> str:
    """The id of a dataset field node."""
    return f"{FIELD_PREFIX}:{namespace}:{dataset}:{field}"
