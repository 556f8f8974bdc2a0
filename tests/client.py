"""Calls the API tests make through the `client` fixture, asserting they succeed."""

from __future__ import annotations

from typing import Any


async def post_all(client: Any, events: list[dict[str, Any]]) -> None:
    """Post events one by one; each must be accepted (201)."""
    for event in events:
        response = await client.post("/api/v1/lineage", json=event)
        assert response.status_code == 201, response.text


async def execute(client: Any, query: str, **variables: Any) -> dict[str, Any]:
    """Run a GraphQL operation; returns the whole body (data and errors)."""
    response = await client.post("/graphql", json={"query": query, "variables": variables})
    assert response.status_code == 200, response.text
    return response.json()


async def gql(client: Any, query: str, **variables: Any) -> dict[str, Any]:
    """Run a GraphQL operation that must succeed; returns its data."""
    body = await execute(client, query, **variables)
    assert "errors" not in body, body["errors"]
    return body["data"]


async def all_stored_events(client: Any) -> Any:
    """Marquez's event list over all time, oldest first: the stored events as the API gives them."""
    return await client.get(
        "/api/v1/events/lineage",
        params={
            "after": "1970-01-01T00:00:00Z",
            "before": "2100-01-01T00:00:00Z",
            "sortDirection": "asc",
        },
    )
