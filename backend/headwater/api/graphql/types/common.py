"""Scalars, enums and the expected-error types that union results are made of."""

from __future__ import annotations

from enum import Enum

import strawberry
from strawberry.scalars import JSON

from headwater.errors import AppError, InvalidRequestError, LineageDepthTooLargeError, NotFoundError

__all__ = [
    "HEAT_DESCRIPTION",
    "JSON",
    "Conflict",
    "DepthTooLarge",
    "InvalidInput",
    "LineageDirection",
    "NodeType",
    "NotFound",
    "Problem",
    "problem_from_error",
]

HEAT_DESCRIPTION = (
    "Asset heat: how much of the lineage graph depends on it, a PageRank in which importance flows "
    "upstream from each dataset or job to what it reads. Scaled as N·h (N nodes), so scores average "
    "1.0: 1.0 is an ordinary node, 10 one ten times as important. Only order and ratios mean "
    "something, and they change as the graph does. Null until `headwater spark heat` has run since "
    "the node appeared, and for nodes deleted when it last ran."
)


@strawberry.enum(description="What a lineage node is.")
class NodeType(Enum):
    DATASET = "DATASET"
    JOB = "JOB"


@strawberry.enum(description="Which way a lineage walk follows edges.")
class LineageDirection(Enum):
    UPSTREAM = strawberry.enum_value(
        "UPSTREAM", description="Towards the sources: edges followed backwards."
    )
    DOWNSTREAM = strawberry.enum_value(
        "DOWNSTREAM", description="Towards the consumers: edges followed forwards."
    )
    BOTH = strawberry.enum_value(
        "BOTH", description="The union of the upstream and the downstream walks."
    )


@strawberry.interface(description="An expected failure, with the same stable code the REST API uses.")
class Problem:
    code: str = strawberry.field(description="Stable machine-readable code, e.g. dataset_not_found.")
    message: str = strawberry.field(description="What went wrong, naming the thing.")


@strawberry.type(name="NotFoundError", description="The thing asked for does not exist.")
class NotFound(Problem):
    pass


@strawberry.type(name="InvalidInputError", description="An argument is malformed or out of range.")
class InvalidInput(Problem):
    pass


@strawberry.type(name="DepthTooLargeError", description="A lineage depth above the server's maximum.")
class DepthTooLarge(Problem):
    maximum: int = strawberry.field(description="The largest depth the server accepts.")


@strawberry.type(name="ConflictError", description="The change conflicts with what is stored.")
class Conflict(Problem):
    pass


OWNERS_DESCRIPTION = (
    "The owners its `ownership` facet names (e.g. team:data-platform), in the facet's order; empty "
    "when none is reported."
)


def owner_names(facets: object) -> list[str]:
    """The names in an OpenLineage `ownership` facet; producers' malformed entries are skipped."""
    ownership = facets.get("ownership") if isinstance(facets, dict) else None
    owners = ownership.get("owners") if isinstance(ownership, dict) else None
    if not isinstance(owners, list):
        return []
    names = (o.get("name") for o in owners if isinstance(o, dict))
    return list(dict.fromkeys(n for n in names if isinstance(n, str) and n))


def problem_from_error(error: AppError, maximum: int | None = None) -> Problem:
    """The GraphQL error type of an expected failure."""
    if isinstance(error, LineageDepthTooLargeError):
        return DepthTooLarge(code=error.code, message=error.message, maximum=maximum or 0)
    if isinstance(error, NotFoundError):
        return NotFound(code=error.code, message=error.message)
    if isinstance(error, InvalidRequestError):
        return InvalidInput(code=error.code, message=error.message)
    if error.status == 409:
        return Conflict(code=error.code, message=error.message)
    raise error
