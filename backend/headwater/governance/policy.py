"""The governance policy: classification levels, classifying tags, masking, and rules.

One TOML file, named by ``HEADWATER_POLICIES``, read when the server starts (see the README):

    levels = ["public", "internal", "confidential", "restricted"]   # lowest first
    tags = ["pii"]                                                   # free classifying tags

    [masking]
    aggregations = ["COUNT"]   # an AGGREGATION whose description starts with one masks
    indirect = true            # INDIRECT edges (filters, joins, grouping keys) carry nothing

    [[rules]]
    name = "no-confidential-in-public"
    max_level = "internal"      # a column above this level...
    in_datasets_at = "public"   # ...in a dataset declared at this level or below

    [[rules]]
    name = "pii-in-warehouse-only"
    tag = "pii"
    allowed_namespaces = ["postgres://warehouse:5432"]   # only in datasets of these namespaces

    [[rules]]
    name = "no-pii-in-public"
    tag = "pii"
    in_datasets_at = "public"   # not in datasets declared at this level or below

Without the file the levels and tags above apply, COUNT masks, and there are no rules.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from headwater.errors import InvalidRequestError, shown

DEFAULT_LEVELS = ("public", "internal", "confidential", "restricted")
DEFAULT_TAGS = ("pii",)
DEFAULT_AGGREGATIONS = ("COUNT",)
# Keys of a producer's tag whose value names the classification ({"key": "classification",
# "value": "confidential"}); any other key classifies when it is a label and its value is true.
_CLASSIFICATION_KEYS = frozenset({"classification", "level", "sensitivity"})
_TRUE = frozenset({"true", "yes", "1", ""})
_RULE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$")


class PolicyError(ValueError):
    """The policy file is wrong; the message names the file, the entry and the problem."""


@dataclass(frozen=True)
class LevelRule:
    """No column above ``max_level`` in a dataset declared at ``in_datasets_at`` or below."""

    name: str
    max_level: str
    in_datasets_at: str


@dataclass(frozen=True)
class TagRule:
    """Columns carrying ``tag`` only in datasets of ``allowed_namespaces`` (when given), and not in
    datasets declared at ``in_datasets_at`` or below (when given)."""

    name: str
    tag: str
    allowed_namespaces: tuple[str, ...] | None = None
    in_datasets_at: str | None = None


Rule = LevelRule | TagRule


@dataclass(frozen=True)
class Violation:
    """What a rule finds wrong with one column: the offending label and the path it came by."""

    rule: str
    label: str
    path: list[dict[str, Any]]


@dataclass(frozen=True)
class Policy:
    levels: tuple[str, ...] = DEFAULT_LEVELS
    tags: tuple[str, ...] = DEFAULT_TAGS
    masking_aggregations: tuple[str, ...] = DEFAULT_AGGREGATIONS
    indirect_masks: bool = True
    rules: tuple[Rule, ...] = field(default_factory=tuple)

    @property
    def labels(self) -> frozenset[str]:
        return frozenset(self.levels) | frozenset(self.tags)

    @property
    def fingerprint(self) -> str:
        """Changes whenever anything that decides labels or violations changes."""
        text = json.dumps(
            {
                "levels": self.levels,
                "tags": self.tags,
                "masking": self.masking_aggregations,
                "indirect": self.indirect_masks,
                "rules": [[type(r).__name__, asdict(r)] for r in self.rules],
            },
            sort_keys=True,
        )
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def rank(self, label: str) -> int:
        """A level's rank (0 is the lowest); -1 for a tag."""
        return self.levels.index(label) if label in self.levels else -1

    def level_of(self, labels: dict[str, list[dict[str, Any]]]) -> str | None:
        """The highest level among ``labels``, None when none is a level."""
        found = [label for label in labels if label in self.levels]
        return max(found, key=self.rank) if found else None

    def check_label(self, label: str) -> str:
        """A label as declared through the API, lower-cased; 400 naming the allowed ones otherwise."""
        value = label.strip().lower()
        if value not in self.labels:
            raise InvalidRequestError(
                f"Unknown classification '{shown(label)}': levels are {', '.join(self.levels)}; "
                f"tags are {', '.join(self.tags) or '(none)'} (HEADWATER_POLICIES)."
            )
        return value

    def label_of_tag(self, key: str, value: str | None) -> str | None:
        """The label a producer's tag (tags facet, schema field tag, tag API) declares, if any."""
        key = key.strip().lower()
        value = (value or "").strip().lower()
        if key in _CLASSIFICATION_KEYS and value in self.labels:
            return value
        if key in self.labels and value in _TRUE:
            return key
        return None

    def masks(
        self,
        transformation_type: str | None,
        subtype: str | None,
        description: str | None,
        masking: bool | None,
    ) -> bool:
        """True when a column edge does not carry its input's classifications.

        Masked by the producer (OpenLineage's ``masking: true``), an aggregation the policy says
        removes identity (COUNT by default), or an INDIRECT edge unless the policy says otherwise:
        a filter, join or grouping key steers which rows come out, it does not copy its value.
        """
        if masking or (self.indirect_masks and (transformation_type or "").upper() == "INDIRECT"):
            return True
        if (subtype or "").upper() != "AGGREGATION" or not description:
            return False
        head = description.strip().upper()
        return any(
            head.startswith(name) and not head[len(name) : len(name) + 1].isalnum()
            for name in self.masking_aggregations
        )

    def _at_or_below(self, dataset_level: str | None, level: str) -> bool:
        return dataset_level is not None and self.rank(dataset_level) <= self.rank(level)

    def violations(
        self,
        namespace: str,
        dataset_level: str | None,
        labels: dict[str, list[dict[str, Any]]],
    ) -> list[Violation]:
        """What each rule finds wrong with a column carrying ``labels`` (label -> path) in a
        dataset of ``namespace`` declared at ``dataset_level`` (None: not declared)."""
        out = []
        for rule in self.rules:
            if isinstance(rule, LevelRule):
                level = self.level_of(labels)
                if (
                    level is not None
                    and self.rank(level) > self.rank(rule.max_level)
                    and self._at_or_below(dataset_level, rule.in_datasets_at)
                ):
                    out.append(Violation(rule.name, level, labels[level]))
            elif rule.tag in labels and (
                (rule.allowed_namespaces is not None and namespace not in rule.allowed_namespaces)
                or (
                    rule.in_datasets_at is not None
                    and self._at_or_below(dataset_level, rule.in_datasets_at)
                )
            ):
                out.append(Violation(rule.name, rule.tag, labels[rule.tag]))
        return out

    def describe(self) -> dict[str, Any]:
        """The policy as the API shows it."""
        return {
            "levels": list(self.levels),
            "tags": list(self.tags),
            "masking": {
                "aggregations": list(self.masking_aggregations),
                "indirect": self.indirect_masks,
            },
            "rules": [_describe_rule(r) for r in self.rules],
        }


def _describe_rule(rule: Rule) -> dict[str, Any]:
    if isinstance(rule, LevelRule):
        return {"name": rule.name, "maxLevel": rule.max_level, "inDatasetsAt": rule.in_datasets_at}
    return {
        "name": rule.name,
        "tag": rule.tag,
        "allowedNamespaces": None if rule.allowed_namespaces is None else list(rule.allowed_namespaces),
        "inDatasetsAt": rule.in_datasets_at,
    }


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise PolicyError(f"{where} must be a list of non-empty strings")
    return tuple(v.strip() for v in value)


def _rule(entry: Any, index: int, levels: tuple[str, ...], tags: tuple[str, ...]) -> Rule:
    where = f"rules[{index}]"
    if not isinstance(entry, dict):
        raise PolicyError(f"{where} must be a table")
    name = entry.get("name")
    if not isinstance(name, str) or not _RULE_NAME.match(name):
        raise PolicyError(f"{where}.name must be 1 to 100 letters, digits or '_.:-'")
    where = f"rule '{name}'"
    keys = set(entry) - {"name"}
    if keys == {"max_level", "in_datasets_at"}:
        for key in ("max_level", "in_datasets_at"):
            if entry[key] not in levels:
                raise PolicyError(f"{where}: {key} must be one of {', '.join(levels)}")
        return LevelRule(name, entry["max_level"], entry["in_datasets_at"])
    if "tag" in keys and len(keys) > 1 and keys <= {"tag", "allowed_namespaces", "in_datasets_at"}:
        if entry["tag"] not in tags:
            raise PolicyError(f"{where}: tag must be one of the policy's tags ({', '.join(tags)})")
        allowed = entry.get("allowed_namespaces")
        at = entry.get("in_datasets_at")
        if at is not None and at not in levels:
            raise PolicyError(f"{where}: in_datasets_at must be one of {', '.join(levels)}")
        namespaces = None if allowed is None else _strings(allowed, f"{where}.allowed_namespaces")
        return TagRule(name, entry["tag"], namespaces, at)
    raise PolicyError(
        f"{where} must have either max_level and in_datasets_at, or tag with allowed_namespaces "
        f"and/or in_datasets_at (got {', '.join(sorted(keys)) or 'nothing'})"
    )


def parse_policy(document: dict[str, Any]) -> Policy:
    """A policy from the file's parsed TOML."""
    unknown = set(document) - {"levels", "tags", "masking", "rules"}
    if unknown:
        raise PolicyError(f"unknown keys {', '.join(sorted(unknown))}")
    levels = tuple(v.lower() for v in _strings(document.get("levels", list(DEFAULT_LEVELS)), "levels"))
    tags = tuple(v.lower() for v in _strings(document.get("tags", list(DEFAULT_TAGS)), "tags"))
    if not levels:
        raise PolicyError("levels must name at least one level")
    if len(set(levels)) != len(levels) or set(levels) & set(tags) or len(set(tags)) != len(tags):
        raise PolicyError("levels and tags must be distinct names")
    masking = document.get("masking", {})
    if not isinstance(masking, dict) or set(masking) - {"aggregations", "indirect"}:
        raise PolicyError("[masking] may only set aggregations and indirect")
    indirect = masking.get("indirect", True)
    if not isinstance(indirect, bool):
        raise PolicyError("masking.indirect must be true or false")
    aggregations = tuple(
        v.upper()
        for v in _strings(
            masking.get("aggregations", list(DEFAULT_AGGREGATIONS)), "masking.aggregations"
        )
    )
    entries = document.get("rules", [])
    if not isinstance(entries, list):
        raise PolicyError("rules must be an array of tables ([[rules]])")
    rules = tuple(_rule(e, i, levels, tags) for i, e in enumerate(entries))
    names = [r.name for r in rules]
    if len(set(names)) != len(names):
        raise PolicyError("rule names must be unique")
    return Policy(levels, tags, aggregations, indirect, rules)


def load_policy(path: Path | None) -> Policy:
    """The policy in ``path`` (TOML), or the default policy without one."""
    if path is None:
        return Policy()
    try:
        document = tomllib.loads(path.read_text())
        return parse_policy(document)
    except OSError as exc:
        raise PolicyError(f"cannot read the policy file {path}: {exc.strerror}") from exc
    except (tomllib.TOMLDecodeError, PolicyError) as exc:
        raise PolicyError(f"policy file {path}: {exc}") from exc
    except RecursionError:
        raise PolicyError(f"policy file {path}: nested too deeply to read") from None
