"""OpenLineage lineage for PySpark, sent to Headwater (or any OpenLineage HTTP endpoint).

    from headwater_spark import enable_lineage
    enable_lineage(spark)

Importing this package is cheap: the listener and its dependencies load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["__version__", "enable_lineage"]

if TYPE_CHECKING:
    from headwater_spark.listener import SparkLineage


def enable_lineage(spark: Any, **options: Any) -> SparkLineage | None:
    """Report what ``spark`` reads and writes as OpenLineage events; see ``listener.enable_lineage``."""
    from headwater_spark.listener import enable_lineage as _enable

    return _enable(spark, **options)
