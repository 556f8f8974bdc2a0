"""Node documents of lineage answers (Marquez's ``data`` objects), with an exact in-process cache.

Building a document costs the database tens of microseconds (fields, latest run, JSON), which for
an answer of thousands of nodes is most of the request. Documents are cached per process, keyed by
node id and checked on every use against the node's version stamp (``lineage_node_stamps``: the
transaction that last wrote the dataset's row, or the job's row and its latest run's), which the
walk returns with the nodes.
A document is served from the cache only when the stamp it was built at is the current one, so the
cache can never answer with an older document than the database holds; a changed or evicted node is
simply rebuilt.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import msgspec

from headwater.db.queries import QUERIES

if TYPE_CHECKING:
    from collections.abc import MutableMapping

    import asyncpg

    from headwater.lineage.node_ids import NodeType

DEFAULT_CACHE_SIZE = 20_000  # about 30 MB of documents of 1-2 KB


class NodeDocument(msgspec.Struct, frozen=True, gc=False):
    """A dataset or job as a lineage node: its id, identity and encoded ``data`` object.

    Not tracked by the garbage collector (no reference cycles): a full cache would otherwise make
    every full collection walk tens of thousands of entries.
    """

    node_id: int
    stamp: int
    id: str
    type: NodeType
    namespace: str
    name: str
    data_json: bytes


class DocumentCache:
    """Documents by node id, least recently used first out; entries are valid for one stamp only."""

    def __init__(self, max_size: int = DEFAULT_CACHE_SIZE) -> None:
        self.max_size = max_size
        self._entries: OrderedDict[int, NodeDocument] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, node_id: int, stamp: int) -> NodeDocument | None:
        """The cached document of a node if it was built at this stamp."""
        doc = self._entries.get(node_id)
        if doc is None or doc.stamp != stamp:
            return None
        self._entries.move_to_end(node_id)
        return doc

    def put(self, doc: NodeDocument) -> None:
        if self.max_size <= 0:
            return
        self._entries[doc.node_id] = doc
        self._entries.move_to_end(doc.node_id)
        while len(self._entries) > self.max_size:
            self._entries.popitem(last=False)


def cache_for(state: MutableMapping[str, Any], max_size: int = DEFAULT_CACHE_SIZE) -> DocumentCache:
    """The document cache kept in an app's state (one per app, so one per database)."""
    cache = state.get("lineage_documents")
    if cache is None:
        cache = state["lineage_documents"] = DocumentCache(max_size)
    return cache


async def load_documents(
    conn: asyncpg.Connection, stamps: dict[int, int], cache: DocumentCache | None = None
) -> dict[int, NodeDocument]:
    """Documents of the given nodes (node id -> current stamp): cached ones, the rest in one query."""
    docs: dict[int, NodeDocument] = {}
    missing: list[int] = []
    for node_id, stamp in stamps.items():
        doc = cache.get(node_id, stamp) if cache is not None else None
        if doc is None:
            missing.append(node_id)
        else:
            docs[node_id] = doc
    if missing:
        for row in await conn.fetch(QUERIES["fetch_lineage_nodes"], missing):
            node_type = row["node_type"]
            doc = NodeDocument(
                row["node_id"],
                row["stamp"],
                f"{node_type.lower()}:{row['namespace']}:{row['name']}",
                node_type,
                row["namespace"],
                row["name"],
                row["data"].encode(),
            )
            docs[doc.node_id] = doc
            if cache is not None:
                cache.put(doc)
    return docs
