"""Ingest: a posted OpenLineage event is validated, normalized and stored in one transaction."""
