"""Tags: every tag, and creating one or changing its description (tagging is in nodes.py)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import get, put
from litestar.datastructures import State

from headwater.api.parameters import refuse_nul_fields
from headwater.api.rest.catalog.routing import BODY_PROBLEMS, PROBLEMS, name
from headwater.errors import InvalidRequestError, shown
from headwater.store import tags as tag_store


class TagBody(msgspec.Struct, forbid_unknown_fields=True):
    """What PUT /api/v1/tags/{tag} may carry: its description, and its name as GET lists it (a
    client may send back what it read), which must then be the path's. Any other key is refused:
    a misspelt ``descrption`` would otherwise change nothing and answer 200."""

    description: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        refuse_nul_fields(self)


def _tag_json(t: tag_store.TagRecord) -> dict[str, Any]:
    return {"name": t.name, "description": t.description}


@get("/api/v1/tags", summary="List tags", tags=["catalog"], responses=PROBLEMS)
async def list_tags(state: State) -> dict[str, Any]:
    """Every tag, by name: {tags: [{name, description}]}."""
    async with state.pool.acquire() as conn:
        return {"tags": [_tag_json(t) for t in await tag_store.list_tags(conn)]}


@put(
    "/api/v1/tags/{tag:str}",
    summary="Create a tag or describe it",
    tags=["catalog"],
    responses=BODY_PROBLEMS,
)
async def put_tag(state: State, tag: str, data: TagBody | None = None) -> dict[str, Any]:
    """Creates the tag if it is new; a description, when given, replaces the stored one."""
    async with state.pool.acquire() as conn:
        tag_name = name(tag)
        if data is not None and data.name is not None and data.name != tag_name:
            raise InvalidRequestError(
                f"The body names the tag '{shown(data.name)}' and the path '{shown(tag_name)}'; "
                "a tag is renamed by no request: leave the body's name out or make it the path's."
            )
        described = data.description if data else None
        return _tag_json(await tag_store.put_tag(conn, tag_name, described))


tag_handlers = [list_tags, put_tag]
