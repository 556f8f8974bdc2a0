"""Configurable alias rules: the same table reported under another engine's name becomes one dataset.

A rules file (HEADWATER_ALIAS_RULES_FILE) is JSON: a list of rules, each mapping a namespace and a
name prefix to the namespace and prefix another engine uses. Trino's catalog ``hive`` on
``trino://coordinator:8080`` naming ``hive.sales.orders`` is the metastore table ``sales.orders``::

    [{"namespace": "trino://coordinator:8080", "namePrefix": "hive.",
      "targetNamespace": "hive://metastore", "targetNamePrefix": ""}]

The same for every catalog of a Trino cluster at once (a string target keeps the rest of the name;
an object also replaces the catalog with a name prefix)::

    [{"trinoUri": "trino://coordinator:8080",
      "catalogs": {"hive": "hive://metastore",
                   "pg": {"namespace": "postgres://db:5432", "namePrefix": "shop."}}}]
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from headwater.ingest.normalize import AliasRule


@dataclass(frozen=True)
class PrefixRule:
    """namespace + name prefix -> target namespace + target prefix."""

    namespace: str
    name_prefix: str
    target_namespace: str
    target_name_prefix: str = ""

    def __call__(self, namespace: str, name: str) -> tuple[str, str] | None:
        if namespace != self.namespace or not name.startswith(self.name_prefix):
            return None
        return self.target_namespace, self.target_name_prefix + name[len(self.name_prefix) :]


def load_alias_rules(path: Path | None) -> list[AliasRule]:
    """Read the rules file; a missing key or a bad file is an error naming the rule."""
    if path is None:
        return []
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"Cannot read alias rules from {path}: {exc}") from exc
    if not isinstance(data, list):
        raise ValueError(f"Alias rules in {path} must be a JSON list of rules")
    rules: list[AliasRule] = []
    for i, item in enumerate(data):
        if isinstance(item, dict) and "catalogs" in item:
            rules.extend(_trino_catalog_rules(item, i, path))
            continue
        try:
            rules.append(
                PrefixRule(
                    namespace=item["namespace"],
                    name_prefix=item.get("namePrefix", ""),
                    target_namespace=item["targetNamespace"],
                    target_name_prefix=item.get("targetNamePrefix", ""),
                )
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(
                f"Alias rule {i} in {path} needs 'namespace' and 'targetNamespace': {exc}"
            ) from exc
    return rules


def _trino_catalog_rules(item: dict[str, Any], i: int, path: Path) -> list[AliasRule]:
    uri, catalogs = item.get("trinoUri"), item.get("catalogs")
    if not isinstance(uri, str) or not isinstance(catalogs, dict):
        raise ValueError(
            f"Alias rule {i} in {path} needs 'trinoUri' (a string) and 'catalogs' (an object)"
        )
    try:
        return list(catalog_alias_rules(uri, catalogs))
    except ValueError as exc:
        raise ValueError(f"Alias rule {i} in {path}: {exc}") from exc


def trino_namespace(uri: str) -> str:
    """``trino://host:port`` from a coordinator URI such as ``http://host:8080`` or ``host:8080``."""
    value = uri.strip()
    if "://" not in value:
        value = "trino://" + value
    try:
        authority = urlsplit(value).netloc.rpartition("@")[2]
    except ValueError:  # an unbalanced "[" or "]" (an IPv6 literal)
        authority = ""
    if not authority:
        raise ValueError(f"Not a Trino coordinator URI: {uri!r} (expected e.g. http://trino:8080)")
    return f"trino://{authority}"


def catalog_alias_rules(trino_uri: str, catalogs: Mapping[str, Any]) -> list[PrefixRule]:
    """Alias rules naming a Trino catalog's tables as the engine behind the catalog names them.

    ``{"hive": "hive://metastore"}`` makes ``hive.sales.orders`` on the coordinator the metastore's
    ``sales.orders``; ``{"pg": {"namespace": "postgres://db:5432", "namePrefix": "shop."}}`` makes
    ``pg.public.orders`` the PostgreSQL table ``shop.public.orders``.
    """
    namespace = trino_namespace(trino_uri)
    rules = []
    for catalog, target in catalogs.items():
        if isinstance(target, str):
            target_namespace, target_prefix = target, ""
        elif isinstance(target, Mapping) and isinstance(target.get("namespace"), str):
            target_namespace, target_prefix = target["namespace"], target.get("namePrefix", "")
            if not isinstance(target_prefix, str):
                raise ValueError(f"catalog {catalog!r}: namePrefix must be a string")
        else:
            raise ValueError(
                f"catalog {catalog!r} must map to a namespace or to "
                '{"namespace": ..., "namePrefix": ...}'
            )
        if not catalog or not target_namespace:
            raise ValueError(f"catalog {catalog!r}: catalog and namespace must not be empty")
        rules.append(PrefixRule(namespace, f"{catalog}.", target_namespace, target_prefix))
    return rules
