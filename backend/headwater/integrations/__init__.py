"""Bridges from engines' own event formats to OpenLineage events. Pure functions, no I/O."""
