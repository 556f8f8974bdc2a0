"""Typed async functions over the named queries in db/queries: one module per aggregate."""
