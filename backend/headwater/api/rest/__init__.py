"""Litestar controllers of the REST API."""
