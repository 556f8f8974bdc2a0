"""Group a batch of events into waves of events that can be written together. Pure, no I/O.

Two events of a wave never touch the same row: not the same run, job (as job or as parent) or
dataset, under any of its identities. Every write is then independent of the others of its wave, so
writing a wave at once (``rounds``) gives what writing its events one by one would. Events that do
share a row keep their order: an event goes in the wave after the last one it shares a row with.

Datasets are compared through every identity that can lead to the same stored dataset: identities
named together (a symlink, an alias rule) and those already recorded as aliases of one dataset are
joined, so two events naming one table differently are never in the same wave.

Data sources are shared by many datasets and keep the latest non-null uri: events reporting the same
uri for a source can share a wave; one reporting another uri goes after every event before it that
named the source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from headwater.ingest.dataset_writes import IdentityLists, dataset_identity_lists
from headwater.ingest.fold import touches_parent

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Hashable

    from headwater.ingest.normalize import AliasRule, NormalizedEvent

Identity = tuple[str, str]


class _Identities:
    """Union-find over dataset identities: identities of one stored dataset share a root."""

    def __init__(self) -> None:
        self.parent: dict[Identity, Identity] = {}

    def root(self, identity: Identity) -> Identity:
        parent = self.parent.setdefault(identity, identity)
        if parent != identity:
            parent = self.parent[identity] = self.root(parent)
        return parent

    def join(self, a: Identity, b: Identity) -> None:
        ra, rb = self.root(a), self.root(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def event_identities(lists: list[IdentityLists]) -> list[Identity]:
    """Every dataset identity the events name, from their identity lists (to look up which are
    already aliases)."""
    return sorted(
        {(i[0], i[1]) for event_lists in lists for identities in event_lists for i in identities}
    )


def plan_waves(
    events: list[NormalizedEvent],
    rules: list[AliasRule],
    stored_aliases: dict[Identity, Identity],
    parents_created: dict[tuple[str, str], dt.datetime] | None = None,
    identity_lists: list[IdentityLists] | None = None,
) -> list[list[int]]:
    """Indexes of ``events`` per wave, in order; each wave lists its events in their given order.

    ``stored_aliases`` maps identities already recorded to the canonical identity of their dataset;
    ``parents_created``, when the stored parent jobs were created: an event only naming a parent
    that it does not change (``fold.touches_parent``) does not wait for the events writing it.
    ``identity_lists``: each event's ``dataset_identity_lists``, when the caller has them.
    """
    created = parents_created or {}
    identities = _Identities()
    lists = identity_lists or [dataset_identity_lists(n, rules) for n in events]
    for event_lists in lists:
        for identity_list in event_lists:
            for ns, nm, _ in identity_list[1:]:
                identities.join((identity_list[0][0], identity_list[0][1]), (ns, nm))
    for alias, canonical in stored_aliases.items():
        identities.join(alias, canonical)

    last_wave: dict[Hashable, int] = {}  # row -> last wave that touched it
    sources = _Sources()
    waves: list[list[int]] = []
    for index, (n, event_lists) in enumerate(zip(events, lists, strict=True)):
        rows = _rows(n, event_lists, identities, created)
        reported = {(d.source_name, d.source_uri) for d in n.inputs + n.outputs if d.source_name}
        wave = max(
            sources.earliest_wave(reported),
            max((last_wave[r] + 1 for r in rows if r in last_wave), default=0),
        )
        sources.record(reported, wave)
        for r in rows:
            last_wave[r] = wave
        if wave == len(waves):
            waves.append([])
        waves[wave].append(index)
    return waves


def _rows(
    n: NormalizedEvent,
    identity_lists: IdentityLists,
    identities: _Identities,
    parents_created: dict[tuple[str, str], dt.datetime],
) -> set[Hashable]:
    """The run, jobs and datasets an event writes."""
    rows: set[Hashable] = {("dataset", identities.root((i[0][0], i[0][1]))) for i in identity_lists}
    if n.run_id is not None:
        rows.add(("run", n.run_id))
    if n.job_namespace is not None:
        rows.add(("job", n.job_namespace, n.job_name))
    if touches_parent(n, parents_created):
        assert n.parent_job is not None
        rows.add(("job", *n.parent_job))
    return rows


class _Sources:
    """Per data source: its latest uri, the wave that set it and the last wave that named it."""

    def __init__(self) -> None:
        self.state: dict[str, tuple[str | None, int, int]] = {}

    def earliest_wave(self, reported: set[tuple[str, str | None]]) -> int:
        wave = 0
        for name, uri in reported:
            if name in self.state and uri is not None:
                latest, set_in, last = self.state[name]
                wave = max(wave, set_in if uri == latest else last + 1)
        return wave

    def record(self, reported: set[tuple[str, str | None]], wave: int) -> None:
        for name, uri in reported:
            latest, set_in, last = self.state.get(name, (None, wave, wave))
            if uri is not None and uri != latest:
                latest, set_in = uri, wave
            self.state[name] = (latest, set_in, max(last, wave))
