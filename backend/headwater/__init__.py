"""Headwater: an OpenLineage-compatible lineage metadata backend on PostgreSQL."""

__version__ = "0.1.0"
