"""Classifications along column lineage, and policy checks, applied from the change log.

Each page of the change log (after the last change applied) is turned into:

1. the datasets it touched: those it is about, the ends of the edges it added or removed, and
   the datasets its jobs read and write now;
2. the classifications producers declare on them (tags facet, schema field tags, tag API),
   compared with the stored ones; API declarations arrive as CLASSIFICATION_DECLARED changes;
3. propagation in waves: the fields of those datasets are recomputed from their inputs; only
   the fields whose inherited labels changed (or whose declarations did) pass the wave on to the
   fields computed from them. Work follows what changed, never the whole graph;
4. the policy's rules checked on every field whose labels changed, violations opened or cleared.

What a field inherits: every label of each input, declared or inherited, through each column
edge that does not mask (see ``Policy.masks``), with the path it came by. The shortest path wins
(then the first by its hops' datasets, fields and jobs, so the answer never depends on the order
rows come in). A path
never passes the field itself, so a cycle in the lineage cannot keep alive a label whose source
is gone: this is path-vector routing, and it settles on paths that exist.

Each page is one transaction with the progress row locked, so the outcome, the change-log rows
announcing it and the progress commit together, and one server at a time applies a page.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import asyncpg

from headwater.feed import log as change_log
from headwater.lineage.node_ids import split_candidates
from headwater.store import governance as store
from headwater.store.changes import Change, insert_changes

if TYPE_CHECKING:
    from headwater.feed.log import ChangeRecord
    from headwater.governance.policy import Policy

CLASSIFICATION_DECLARED = "CLASSIFICATION_DECLARED"
CLASSIFICATION_CHANGED = "CLASSIFICATION_CHANGED"
POLICY_VIOLATION = "POLICY_VIOLATION"
POLICY_VIOLATION_CLEARED = "POLICY_VIOLATION_CLEARED"
# What this module writes as a consequence: never a cause of more work.
OWN_KINDS = frozenset({CLASSIFICATION_CHANGED, POLICY_VIOLATION, POLICY_VIOLATION_CLEARED})
PAGE_SIZE = 500
MAX_LOCK_RETRIES = 50

Field = store.Field
Path = store.Path


@dataclass
class Outcome:
    """What applying changes did."""

    last_change_id: int = 0
    changes_read: int = 0  # changes of other kinds than those governance writes
    fields_recomputed: int = 0
    fields_changed: int = 0
    violations_opened: int = 0
    violations_cleared: int = 0
    full: bool = False

    def add(self, other: Outcome) -> None:
        self.last_change_id = max(self.last_change_id, other.last_change_id)
        self.changes_read += other.changes_read
        self.fields_recomputed += other.fields_recomputed
        self.fields_changed += other.fields_changed
        self.violations_opened += other.violations_opened
        self.violations_cleared += other.violations_cleared
        self.full = self.full or other.full


async def settled_change_id(conn: asyncpg.Connection, after: int) -> int:
    """The highest change id below which every change is committed or rolled back for good.

    The latest id is read first: an id below it that is not committed belongs to a transaction
    still running when the running ones are listed next, so the log is applied up to that gap.
    (An id rolled back is such a gap too while other transactions write; `serve` follows the
    change feed instead, which tells the two apart.)
    """
    latest = await change_log.fetch_latest_change_id(conn)
    if latest <= after or await change_log.fetch_oldest_running_xid(conn) is None:
        return latest
    expected = after
    while expected < latest:
        page = await change_log.fetch_changes_between(conn, expected, latest, PAGE_SIZE)
        for change in page:
            if change.change_id != expected + 1:
                return expected
            expected = change.change_id
        if len(page) < PAGE_SIZE:
            break
    return latest if expected == latest else expected


async def apply_pending(conn: asyncpg.Connection, policy: Policy, *, upto: int | None = None) -> Outcome:
    """Apply every change after the stored progress, up to ``upto`` (default: what is settled now),
    a page per transaction. A policy other than the one last applied (or none: a new database)
    recomputes everything instead, in one transaction.
    """
    total = Outcome()
    busy = 0
    while True:
        limit = upto
        if limit is None:  # outside the page's transaction, which would count as a running writer
            progress = await store.fetch_progress(conn)
            limit = await settled_change_id(conn, progress.last_change_id if progress else 0)
        try:
            async with conn.transaction():
                progress = await store.lock_progress(conn)
                # Past the progress row, a lock this transaction waits for long is one that something
                # holding everything (a TRUNCATE, a migration) wants back: give way and come again
                # rather than wait for the deadlock detector to pick a victim.
                await store.give_way_on_locks(conn)
                after = progress.last_change_id
                changes = []
                if progress.policy != policy.fingerprint:
                    # Everything recomputed from the tables as they are, which hold every change
                    # up to the limit: those need no replay.
                    outcome = await apply_changes(conn, policy, [], full=True)
                    outcome.last_change_id = max(after, limit)
                elif limit > after:
                    changes = await change_log.fetch_changes_between(conn, after, limit, PAGE_SIZE)
                    outcome = await apply_changes(conn, policy, changes)
                    outcome.last_change_id = changes[-1].change_id if changes else after
                else:
                    # Nothing left to apply (another process may have applied it): the outcome
                    # still says how far the applied changes go.
                    total.last_change_id = max(total.last_change_id, after)
                    return total
                await store.save_progress(conn, outcome.last_change_id, policy.fingerprint)
        except asyncpg.exceptions.LockNotAvailableError:
            busy += 1
            if busy > MAX_LOCK_RETRIES:
                raise
            await asyncio.sleep(0.05 * busy)
            continue
        busy = 0
        total.add(outcome)
        if len(changes) < PAGE_SIZE:
            return total


async def apply_changes(
    conn: asyncpg.Connection, policy: Policy, changes: list[ChangeRecord], *, full: bool = False
) -> Outcome:
    """The governance consequences of ``changes``, or with ``full`` of everything as it is now, in
    this transaction."""
    outcome = Outcome(changes_read=sum(1 for c in changes if c.kind not in OWN_KINDS), full=full)
    if full:
        datasets = set(await store.fetch_all_dataset_uuids(conn))
        api_declared: set[Field] = set()
    else:
        datasets, api_declared = await _touched(conn, changes)
    if not datasets:
        return outcome
    declared = await _refresh_producer_declarations(conn, policy, datasets) | api_declared
    if not full and not declared and not await store.fetch_anything_governed(conn):
        # Nothing is labelled anywhere and no violation is open: no field can inherit a label or
        # break a rule, whatever the lineage became. (Most deployments until they declare labels.)
        return outcome
    dirty = await store.fetch_dataset_columns(conn, sorted(datasets))
    # A declaration on a dataset is one on each of its fields.
    whole = sorted({d for d, f in declared if f == ""})
    if whole:
        dirty |= await store.fetch_dataset_columns(conn, whole)
        declared |= {f for f in dirty if f[0] in set(whole)}
    declared = {f for f in declared if f[1] != ""}
    dirty |= declared
    # Recomputing every field reads every declaration as it is now: only the fields whose
    # inherited labels change need to pass the wave on. Then every field is checked, against
    # rules that may be new.
    changed, recomputed, final = await propagate(conn, policy, dirty, set() if full else declared)
    outcome.fields_recomputed = recomputed
    outcome.fields_changed = len(changed)
    at = dt.datetime.now(dt.UTC)
    checked = final if full else {field: final[field] for field in set(changed) | declared}
    announce = await _check_policy(conn, policy, checked, at, retire=full)
    outcome.violations_opened = sum(1 for c in announce.changes if c.kind == POLICY_VIOLATION)
    outcome.violations_cleared = sum(1 for c in announce.changes if c.kind == POLICY_VIOLATION_CLEARED)
    classification = await _classification_changes(conn, changed, at)
    ids = sorted(await insert_changes(conn, classification + announce.changes))
    violation_ids = ids[len(classification) :]
    await announce.write(conn, violation_ids, at)
    return outcome


async def _touched(
    conn: asyncpg.Connection, changes: list[ChangeRecord]
) -> tuple[set[uuid.UUID], set[Field]]:
    """The datasets the changes touched, and the fields (or datasets, field '') the API declared on."""
    dataset_nodes: set[str] = set()
    job_nodes: set[str] = set()
    declared_nodes: list[tuple[str, str]] = []
    for change in changes:
        if change.kind in OWN_KINDS:
            continue
        for node in change.touched:
            if node.startswith("dataset:"):
                dataset_nodes.add(node)
            elif node.startswith("job:"):
                job_nodes.add(node)
        if change.kind == CLASSIFICATION_DECLARED:
            declared_nodes.append((change.node_id, str(change.details.get("field") or "")))
    found = await store.fetch_datasets_by_identity(conn, _candidates(dataset_nodes))
    by_node = {f"dataset:{ns}:{name}": uuid_ for (ns, name), uuid_ in found.items()}
    datasets = set(by_node.values())
    if job_nodes:
        datasets |= {d for d, _ in await store.fetch_job_datasets(conn, _candidates(job_nodes))}
    declared = {(by_node[node], field) for node, field in declared_nodes if node in by_node}
    return datasets, declared


def _candidates(nodes: set[str]) -> list[tuple[str, str]]:
    """Every (namespace, name) split of the node ids; the store says which exist."""
    return [c for node in sorted(nodes) for c in split_candidates(node.partition(":")[2])]


def _tag_labels(policy: Policy, tags: Any) -> list[tuple[str, str | None]]:
    """(label, field or None) of the classifying entries of a tags list ({key, value, field?})."""
    out = []
    for tag in tags if isinstance(tags, list) else []:
        if isinstance(tag, dict) and isinstance(tag.get("key"), str):
            label = policy.label_of_tag(tag["key"], str(tag.get("value") or ""))
            field = tag.get("field")
            if label is not None:
                out.append((label, field if isinstance(field, str) else None))
    return out


def producer_labels(
    policy: Policy, tags: store.ProducerTags
) -> tuple[dict[Field, set[str]], dict[Field, set[str]]]:
    """The labels producers ('facet') and the tag API ('tag') declare on a dataset and its fields."""
    facet: dict[Field, set[str]] = defaultdict(set)
    tagged: dict[Field, set[str]] = defaultdict(set)
    d = tags.dataset_uuid
    for label, field in _tag_labels(policy, tags.facet_tags):
        facet[(d, field or "")].add(label)
    columns = tags.schema_fields if isinstance(tags.schema_fields, list) else []
    for column in columns:
        if isinstance(column, dict) and isinstance(column.get("name"), str):
            for label, _ in _tag_labels(policy, column.get("tags")):
                facet[(d, column["name"])].add(label)
    named = [("", name) for name in tags.dataset_tags] + tags.field_tags
    for field, name in named:
        tag_label = policy.label_of_tag(name, None)
        if tag_label is not None:
            tagged[(d, field)].add(tag_label)
    return facet, tagged


async def _refresh_producer_declarations(
    conn: asyncpg.Connection, policy: Policy, datasets: set[uuid.UUID]
) -> set[Field]:
    """Store what producers and the tag API declare on the datasets now; returns the fields (or
    datasets, field '') whose declarations changed."""
    ordered = sorted(datasets)
    stored: dict[tuple[uuid.UUID, str], dict[Field, set[str]]] = defaultdict(dict)
    for (d, f, source), labels in (
        await store.fetch_declarations(conn, ordered, ["facet", "tag"])
    ).items():
        stored[(d, source)][(d, f)] = labels
    replace: dict[str, dict[Field, set[str]]] = {"facet": {}, "tag": {}}
    for source_tags in await store.fetch_producer_tags(conn, ordered):
        facet, tagged = producer_labels(policy, source_tags)
        for source, now in (("facet", facet), ("tag", tagged)):
            before = stored.get((source_tags.dataset_uuid, source), {})
            for field in before.keys() | now.keys():
                if now.get(field, set()) != before.get(field, set()):
                    replace[source][field] = now.get(field, set())
    for source, fields in replace.items():
        await store.replace_declarations(conn, source, fields)
    return set(replace["facet"]) | set(replace["tag"])


async def propagate(
    conn: asyncpg.Connection, policy: Policy, dirty: set[Field], declared: set[Field]
) -> tuple[dict[Field, dict[str, Path]], int, dict[Field, store.FieldLabels]]:
    """Recompute what ``dirty`` fields inherit, and onwards wherever that changed; ``declared``
    fields pass the wave on whatever they inherit. Returns the fields whose inherited labels
    changed (with what they inherit now), how many field recomputations it took, and the labels
    of every field recomputed as they are now."""
    changed: dict[Field, dict[str, Path]] = {}
    final: dict[Field, store.FieldLabels] = {}
    # What this transaction knows: each field's labels (read once, then as recomputed), and the
    # node ids of datasets and jobs.
    known: dict[Field, store.FieldLabels] = {}
    names: dict[uuid.UUID, str] = {}
    recomputed = 0
    wave = dirty
    edges = await store.fetch_edges_into(conn, sorted(wave))
    push = set(declared)
    while wave:
        fields = sorted(wave)
        recomputed += len(fields)
        unnamed = ({e.input[0] for e in edges} | {f[0] for f in fields}) - names.keys()
        jobs = {e.job_uuid for e in edges if e.job_uuid is not None} - names.keys()
        if unnamed or jobs:
            names.update(await store.fetch_node_ids(conn, sorted(unnamed), sorted(jobs)))
        unknown = ({e.input for e in edges} | wave) - known.keys()
        if unknown:
            fetched = await store.fetch_field_labels(conn, sorted(unknown))
            known.update({f: fetched.get(f) or store.FieldLabels({}, {}) for f in unknown})
        into: dict[Field, list[store.ColumnEdge]] = defaultdict(list)
        for edge in edges:
            into[edge.output].append(edge)
        now: dict[Field, dict[str, Path]] = {}
        had: set[Field] = set()
        for field in fields:
            before = known[field]
            inherited = inherit(policy, field, into.get(field, []), known, names)
            known[field] = final[field] = store.FieldLabels(before.declared, inherited)
            if inherited != before.inherited:
                now[field] = inherited
                if before.inherited:
                    had.add(field)
        await store.replace_inherited(conn, now, had)
        changed.update(now)
        passing = sorted(now.keys() | (push & wave))
        push -= wave
        edges = await store.fetch_edges_of_successors(conn, passing) if passing else []
        wave = {e.output for e in edges}
    return changed, recomputed, final


def inherit(
    policy: Policy,
    field: Field,
    edges: list[store.ColumnEdge],
    labels: dict[Field, store.FieldLabels],
    names: dict[uuid.UUID, str],
) -> dict[str, Path]:
    """What ``field`` inherits through ``edges`` from its inputs' ``labels``: label -> path
    (``names``: the node ids of the datasets and jobs involved)."""
    best: dict[str, Path] = {}
    known = policy.labels
    for edge in edges:
        source = labels.get(edge.input)
        if source is None or policy.masks(
            edge.transformation_type, edge.transformation_subtype, edge.description, edge.masking
        ):
            continue
        node = names[field[0]]
        job = None if edge.job_uuid is None else names[edge.job_uuid]
        hop = {"dataset": node, "field": field[1], "job": job}
        origin = [{"dataset": names[edge.input[0]], "field": edge.input[1], "job": None}]
        offered = {label: origin for label in source.declared}
        for label, path in source.inherited.items():
            offered.setdefault(label, path)
        for label, path in offered.items():
            if label not in known or any(h["dataset"] == node and h["field"] == field[1] for h in path):
                continue  # a label the policy no longer has, or a path round a cycle
            candidate = [*path, hop]
            current = best.get(label)
            if current is None or _before(candidate, current):
                best[label] = candidate
    return dict(sorted(best.items()))


def _before(path: Path, than: Path) -> bool:
    """Whether ``path`` wins over ``than``: fewer hops, then the first by (dataset, field, job),
    hop by hop (only paths of the same length are compared hop by hop)."""
    if len(path) != len(than):
        return len(path) < len(than)
    for mine, theirs in zip(path, than, strict=True):
        a = (mine["dataset"], mine["field"], mine["job"] or "")
        b = (theirs["dataset"], theirs["field"], theirs["job"] or "")
        if a != b:
            return a < b
    return False


def effective_labels(
    policy: Policy, node: str, field: str, labels: store.FieldLabels | None
) -> dict[str, Path]:
    """A field's labels, declared (a one-hop path: the field) or inherited, that the policy knows."""
    if labels is None:
        return {}
    out = {label: path for label, path in labels.inherited.items() if label in policy.labels}
    for label in labels.declared:
        if label in policy.labels:
            out[label] = [{"dataset": node, "field": field, "job": None}]
    return out


@dataclass
class _Announcement:
    """Violations to open, clear or re-path, with the change-log rows announcing them (in order)."""

    changes: list[Change]
    opened: list[tuple[str, Field, str, Path]]
    cleared: list[int]
    updated: list[tuple[int, str, Path]]

    async def write(self, conn: asyncpg.Connection, change_ids: list[int], at: dt.datetime) -> None:
        ids = iter(change_ids)
        new = [
            store.NewViolation(rule, field, label, path, next(ids))
            for rule, field, label, path in self.opened
        ]
        await store.open_violations(conn, new, at)
        await store.clear_violations(conn, [(v, next(ids)) for v in self.cleared], at)
        await store.update_violation_paths(conn, self.updated)


async def _check_policy(
    conn: asyncpg.Connection,
    policy: Policy,
    labels: dict[Field, store.FieldLabels],
    at: dt.datetime,
    *,
    retire: bool,
) -> _Announcement:
    """Check the rules on fields with these labels; with ``retire``, also clear violations of
    rules now gone. Without rules (and nothing to retire) there is nothing to look up."""
    if not policy.rules and not retire:
        return _Announcement([], [], [], [])
    ordered = sorted(labels)
    stale = (
        await store.fetch_violations_of_unknown_rules(conn, [r.name for r in policy.rules])
        if retire
        else []
    )
    datasets = await store.fetch_governed_datasets(
        conn, sorted({f[0] for f in ordered} | {v.field[0] for v in stale})
    )
    open_now = (
        {(v.field, v.rule): v for v in await store.fetch_open_violations(conn, ordered)}
        if ordered
        else {}
    )
    found: dict[tuple[Field, str], tuple[str, Path]] = {}
    for field in ordered:
        dataset = datasets.get(field[0])
        if dataset is None:
            continue
        effective = effective_labels(policy, dataset.node_id, field[1], labels.get(field))
        level = policy.level_of({label: [] for label in dataset.labels if label in policy.levels})
        for v in policy.violations(dataset.namespace, level, effective):
            found[(field, v.rule)] = (v.label, v.path)
    opened: list[tuple[str, Field, str, Path]] = []
    opening: list[Change] = []
    updated = []
    for (field, rule), (label, path) in sorted(found.items()):
        was = open_now.get((field, rule))
        if was is None:
            opened.append((rule, field, label, path))
            opening.append(
                _violation_change(POLICY_VIOLATION, datasets[field[0]], field, rule, label, path, at)
            )
        elif (was.label, was.path) != (label, path):
            updated.append((was.violation_id, label, path))
    gone = [v for key, v in sorted(open_now.items()) if key not in found]
    gone += [v for v in stale if (v.field, v.rule) not in open_now]  # a field not checked here
    closing = [
        _violation_change(
            POLICY_VIOLATION_CLEARED, datasets[v.field[0]], v.field, v.rule, v.label, v.path, at
        )
        for v in gone
        if v.field[0] in datasets
    ]
    return _Announcement(
        opening + closing, opened, [v.violation_id for v in gone if v.field[0] in datasets], updated
    )


def _violation_change(
    kind: str,
    dataset: store.GovernedDataset,
    field: Field,
    rule: str,
    label: str,
    path: Path,
    at: dt.datetime,
) -> Change:
    details: dict[str, Any] = {"rule": rule, "field": field[1], "label": label, "path": path}
    return Change(kind, dataset.node_id, dataset.namespace, at, details)


async def _classification_changes(
    conn: asyncpg.Connection, changed: dict[Field, dict[str, Path]], at: dt.datetime
) -> list[Change]:
    """One CLASSIFICATION_CHANGED per dataset whose fields now inherit other labels."""
    if not changed:
        return []
    by_dataset: dict[uuid.UUID, list[dict[str, Any]]] = defaultdict(list)
    for (dataset_uuid, field), inherited in sorted(changed.items()):
        by_dataset[dataset_uuid].append({"field": field, "inherited": sorted(inherited)})
    datasets = await store.fetch_governed_datasets(conn, sorted(by_dataset))
    return [
        Change(
            CLASSIFICATION_CHANGED, datasets[d].node_id, datasets[d].namespace, at, {"fields": fields}
        )
        for d, fields in by_dataset.items()
        if d in datasets
    ]
