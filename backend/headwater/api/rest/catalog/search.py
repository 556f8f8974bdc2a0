"""Search datasets and jobs by name, as Marquez's search answers."""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

from litestar import get
from litestar.datastructures import State
from litestar.params import Parameter

from headwater.api.rest.catalog.routing import PROBLEMS
from headwater.api.rest.catalog.shapes import iso
from headwater.store import catalog

# Search orders as Marquez spells them, plus HEAT; upper or lower case.
SortParam = Literal["NAME", "UPDATE_AT", "HEAT", "name", "update_at", "heat"]


def _search_sort(sort: SortParam | None) -> catalog.SearchSort:
    return cast("catalog.SearchSort", sort.upper()) if sort else "RELEVANCE"


@get("/api/v1/search", summary="Search datasets and jobs by name", tags=["catalog"], responses=PROBLEMS)
async def search(
    state: State,
    q: Annotated[str, Parameter(min_length=1, description="A part of the name, any case.")],
    filter: Annotated[Literal["DATASET", "JOB"] | None, Parameter(description="Only this kind.")] = None,
    sort: Annotated[
        SortParam | None,
        Parameter(
            description="NAME, UPDATE_AT (newest first) or HEAT (hottest first, never computed "
            "last), in either case; by relevance when absent."
        ),
    ] = None,
    limit: Annotated[
        int, Parameter(ge=1, le=100, description="At most this many results (default 10).")
    ] = 10,
    namespace: str | None = None,
) -> dict[str, Any]:
    """Marquez's search: {totalCount, results: [{type, name, updatedAt, namespace, nodeId, heat}]}."""
    async with state.pool.acquire() as conn:
        hits = await catalog.search_nodes(
            conn, q, namespace=namespace, kind=filter, sort=_search_sort(sort), limit=limit
        )
        total = await catalog.count_search_nodes(conn, q, namespace=namespace, kind=filter)
    return {
        "totalCount": total,
        "results": [
            {
                "type": h.kind,
                "name": h.name,
                "updatedAt": iso(h.updated_at),
                "namespace": h.namespace,
                "nodeId": f"{h.kind.lower()}:{h.namespace}:{h.name}",
                "heat": h.heat,
            }
            for h in hits
        ],
    }
