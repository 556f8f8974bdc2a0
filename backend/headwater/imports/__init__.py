"""Bringing another lineage server's history into Headwater, through Headwater's own ingest."""
