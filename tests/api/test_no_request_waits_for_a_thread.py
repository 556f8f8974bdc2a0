"""Nothing every request passes through is handed to Litestar's thread pool.

Litestar runs a plain-function guard, and a handler or dependency marked ``sync_to_thread``, in its
thread pool. For a guard on the whole app that is a hop to a thread and back for every request, and
while a large GraphQL answer kept the event loop busy it delayed ``/healthz`` by 250 ms (see
tests/api/test_graphql_lineage_load.py, which caught it only some of the time).
"""

from __future__ import annotations

import inspect

from litestar.routes import HTTPRoute

from headwater.app import create_app
from headwater.settings import Settings


def _handlers():
    app = create_app(Settings(database_url="postgresql://postgres@127.0.0.1:5432/unused"))
    for route in app.routes:
        if isinstance(route, HTTPRoute):
            for handler in route.route_handlers:
                yield route.path, handler


def test_every_guard_runs_on_the_event_loop():
    in_threads = {
        f"{guard.__module__}.{guard.__qualname__} on {path}"
        for path, handler in _handlers()
        for guard in handler.resolve_guards()
        if not inspect.iscoroutinefunction(guard)
    }
    assert not in_threads


def test_no_handler_or_dependency_is_sent_to_a_thread():
    in_threads = [
        f"{handler} on {path}"
        for path, handler in _handlers()
        if handler.has_sync_callable and handler.sync_to_thread
    ]
    in_threads += [
        f"dependency {name} of {path}"
        for path, handler in _handlers()
        for name, provider in handler.resolve_dependencies().items()
        if provider.has_sync_callable and provider.sync_to_thread
    ]
    assert not in_threads
