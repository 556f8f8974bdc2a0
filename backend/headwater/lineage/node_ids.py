"""Node ids as the REST and GraphQL APIs spell them: ``dataset:NS:NAME``, ``job:NS:NAME`` and,
for column lineage, ``datasetField:NS:DATASET:FIELD``.

Namespaces contain ``://`` and ``:port`` and names may contain ``:`` too, so the split between
namespace and name is not knowable from the text alone: every split is a candidate, and the store
says which one exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from headwater.errors import InvalidNodeIdError, shown

# Longest identity parts, in UTF-8 bytes: a namespace and a name must fit together in one btree
# index entry (2,704 bytes), with the other columns of the widest index over them. Ingest refuses
# longer ones, so an id whose parts cannot fit names no node, and its splits need not be tried.
MAX_NAMESPACE_BYTES = 1_024
MAX_NAME_BYTES = 1_536
# Field names: two of them and the transformation share an entry of the column lineage index.
MAX_FIELD_NAME_BYTES = 1_024
# Splits of a datasetField id tried at most: one per pair of its colons, so thousands of colons
# would make millions of candidates (each a copy of the id) for the store to look up.
MAX_FIELD_ID_SPLITS = 1_000
# How much of a node id an error message quotes: the id may be as long as a URL.
_QUOTED_CHARS = 200

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
            f"Invalid node id {_quoted(node_id)}: expected 'dataset:NAMESPACE:NAME' or "
            "'job:NAMESPACE:NAME'."
        )
    _check_length(node_id, rest, MAX_NAMESPACE_BYTES + 1 + MAX_NAME_BYTES, _LIMITS)
    candidates = split_candidates(rest)
    if not candidates:
        raise InvalidNodeIdError(
            f"Invalid node id {_quoted(node_id)}: expected a namespace and a name after '{prefix}:'"
            f"{_LIMITS if rest.count(':') else ''}."
        )
    return ParsedNodeId(node_id, _PREFIXES[prefix], candidates)


def split_candidates(
    rest: str, first_bytes: int = MAX_NAMESPACE_BYTES, second_bytes: int = MAX_NAME_BYTES
) -> list[tuple[str, str]]:
    """Every (namespace, name) split of ``rest`` at a colon, both parts non-empty and within their
    limits in UTF-8 bytes (a longer part names nothing stored)."""
    out = []
    # A part has at least as many bytes as characters: only colons in this window can split.
    i = rest.find(":", max(1, len(rest) - 1 - second_bytes))
    while 0 < i <= first_bytes and i < len(rest) - 1:
        first, second = rest[:i], rest[i + 1 :]
        if _fits(first, first_bytes) and _fits(second, second_bytes):
            out.append((first, second))
        i = rest.find(":", i + 1)
    return out


def utf8_length(text: str) -> int:
    """The bytes ``text`` takes in UTF-8, what the limits on names count."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _fits(part: str, limit: int) -> bool:
    # A part has at least as many bytes as characters: most are ruled out without encoding them.
    return len(part) <= limit and utf8_length(part) <= limit


_LIMITS = (
    f" (a namespace is at most {MAX_NAMESPACE_BYTES:,} bytes in UTF-8 and a name {MAX_NAME_BYTES:,})"
)
_FIELD_LIMITS = (
    f" (a namespace is at most {MAX_NAMESPACE_BYTES:,} bytes in UTF-8, a dataset name "
    f"{MAX_NAME_BYTES:,} and a field name {MAX_FIELD_NAME_BYTES:,})"
)


def _check_length(node_id: str, rest: str, longest: int, limits: str) -> None:
    if len(rest) > longest:
        raise InvalidNodeIdError(
            f"Invalid node id {_quoted(node_id)}: it is {len(node_id):,} characters long, longer "
            f"than any node's{limits}."
        )


def _quoted(node_id: str) -> str:
    quoted = f"'{shown(node_id, _QUOTED_CHARS)}'"
    return quoted if len(node_id) <= _QUOTED_CHARS else f"{quoted} ({len(node_id):,} characters)"


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
            f"Invalid node id {_quoted(node_id)}: expected 'datasetField:NAMESPACE:DATASET:FIELD' or "
            "'dataset:NAMESPACE:NAME'."
        )
    _check_length(
        node_id, rest, MAX_NAMESPACE_BYTES + MAX_NAME_BYTES + MAX_FIELD_NAME_BYTES + 2, _FIELD_LIMITS
    )
    candidates: list[tuple[str, str, str]] = []
    for namespace, tail in split_candidates(
        rest, second_bytes=MAX_NAME_BYTES + 1 + MAX_FIELD_NAME_BYTES
    ):
        for dataset, field in split_candidates(tail, MAX_NAME_BYTES, MAX_FIELD_NAME_BYTES):
            if len(candidates) == MAX_FIELD_ID_SPLITS:
                raise InvalidNodeIdError(
                    f"Invalid node id {_quoted(node_id)}: it splits into a namespace, a dataset and "
                    f"a field in more than {MAX_FIELD_ID_SPLITS:,} ways (one for each pair of its "
                    "colons), more than are looked up."
                )
            candidates.append((namespace, dataset, field))
    if not candidates:
        raise InvalidNodeIdError(
            f"Invalid node id {_quoted(node_id)}: expected a namespace, a dataset and a field after "
            f"'datasetField:'{_FIELD_LIMITS if rest.count(':') > 1 else ''}."
        )
    return ParsedFieldId(node_id, candidates)


def format_field_id(namespace: str, dataset: str, field: str) -> str:
    """The id of a dataset field node."""
    return f"{FIELD_PREFIX}:{namespace}:{dataset}:{field}"
