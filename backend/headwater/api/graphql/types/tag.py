"""Tags."""

from __future__ import annotations

import datetime as dt

import strawberry

from headwater.store.tags import TagRecord


@strawberry.type(description="A label on datasets, dataset fields and jobs (e.g. PII).")
class Tag:
    name: str
    description: str | None
    tagged_at: dt.datetime | None = strawberry.field(description="When it was put on this object.")

    @classmethod
    def from_record(cls, r: TagRecord) -> Tag:
        return cls(name=r.name, description=r.description, tagged_at=r.tagged_at)
