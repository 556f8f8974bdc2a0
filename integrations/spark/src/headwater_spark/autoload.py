"""Switch lineage on without code changes: ``HEADWATER_SPARK_LINEAGE=1``.

The package installs ``headwater_spark_autoload.pth`` into site-packages. At interpreter start it
imports this module only when the variable is set. This module then waits for ``pyspark.sql.session``
to be imported (a meta path hook, no cost for other imports) and wraps
``SparkSession.Builder.getOrCreate`` so that every session it returns gets ``enable_lineage``.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import os
import sys
from typing import Any

ENV_SWITCH = "HEADWATER_SPARK_LINEAGE"
_TARGET = "pyspark.sql.session"

log = logging.getLogger("headwater_spark")


def switched_on(env: Any = None) -> bool:
    value = (os.environ if env is None else env).get(ENV_SWITCH, "")
    return value.strip().lower() in ("1", "true", "yes", "on")


def patch_session_module(module: Any) -> None:
    builder = getattr(getattr(module, "SparkSession", None), "Builder", None)
    if builder is None or getattr(builder.getOrCreate, "_headwater_lineage", False):
        return
    original = builder.getOrCreate

    def getOrCreate(self: Any) -> Any:  # noqa: N802 - the name PySpark calls
        session = original(self)
        try:
            from headwater_spark.listener import enable_lineage

            enable_lineage(session)
        except Exception:
            log.warning("Lineage: automatic enabling failed; the job runs without it", exc_info=True)
        return session

    getOrCreate.__doc__ = original.__doc__
    getOrCreate.__wrapped__ = original  # type: ignore[attr-defined]
    getOrCreate._headwater_lineage = True  # type: ignore[attr-defined]
    builder.getOrCreate = getOrCreate


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self._loader.create_module(spec)

    def __getattr__(self, name: str) -> Any:  # get_source, get_data, is_package, ...
        return getattr(self._loader, name)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        try:
            patch_session_module(module)
        except Exception:
            log.warning("Lineage: could not hook SparkSession", exc_info=True)


class _SessionFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:  # noqa: ARG002
        if fullname != _TARGET:
            return None
        sys.meta_path.remove(self)  # one shot
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _PatchingLoader(spec.loader)
        return spec


def install() -> None:
    """Hook SparkSession creation (now if PySpark is already imported, else when it is)."""
    module = sys.modules.get(_TARGET)
    if module is not None:
        patch_session_module(module)
        return
    if not any(isinstance(f, _SessionFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _SessionFinder())


if switched_on():
    install()
