"""Marquez's REST API over Headwater's catalog, under /api/v1.

Shapes follow Marquez's API (``{"totalCount", "datasets": [...]}``, ``id: {namespace, name}``,
run states NEW / RUNNING / COMPLETED / FAILED / ABORTED), so Marquez clients and its web UI read and
tag Headwater's catalog. Lists page with ``limit`` and ``offset`` as Marquez does.

routing   names in paths (encoded slashes), paging parameters
shapes    records -> Marquez JSON
nodes     namespaces, datasets and jobs: lists, versions, tags, soft deletes
runs      runs and their facets, jobs of every namespace by last run state
search    search by name
tags      the tag list and tag descriptions
activity  the stored events and the dashboard's counts
"""

from headwater.api.rest.catalog.activity import activity_handlers
from headwater.api.rest.catalog.nodes import node_handlers
from headwater.api.rest.catalog.routing import keep_encoded_slashes
from headwater.api.rest.catalog.runs import run_handlers
from headwater.api.rest.catalog.search import search
from headwater.api.rest.catalog.shapes import datasets_json, jobs_json, runs_json
from headwater.api.rest.catalog.tags import tag_handlers

catalog_handlers = [*node_handlers, *run_handlers, search, *tag_handlers, *activity_handlers]

__all__ = ["catalog_handlers", "datasets_json", "jobs_json", "keep_encoded_slashes", "runs_json"]
