"""Governance along lineage: classifications that follow the data, and policy checks."""
