"""Built web bundles served from inside the package: the console's and GraphiQL's (no CDN).

A bundle is the fixed set of files of one directory, read once and served from memory by name:
what a URL says is never looked up in the file system (a name too long for it, or a path under a
file, had been a 500; the directory itself a 404 naming its absolute path). Any other name is a 404.
Pages name each file with a hash of its content (``versioned``), so a new build is never mixed with
a cached old one: the files are cached for a day, and a request holding the file's ETag is a 304.
"""

from __future__ import annotations

import hashlib
import mimetypes
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated

from litestar import Response, Router, get
from litestar.datastructures import CacheControlHeader
from litestar.params import HeaderParameter

from headwater.errors import NotFoundError

_CACHE_CONTROL = CacheControlHeader(max_age=86400).to_header()


@dataclass(frozen=True)
class _File:
    content: bytes
    media_type: str
    digest: str

    @property
    def etag(self) -> str:
        return f'"{self.digest}"'


@dataclass(frozen=True)
class Bundle:
    """The files of ``directory``, served under the URL path ``url_path``."""

    url_path: str
    directory: Path

    @cached_property
    def files(self) -> dict[str, _File]:
        files = {}
        for path in sorted(self.directory.iterdir()):
            if path.is_file():
                content = path.read_bytes()
                # Litestar adds the charset of text types.
                media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
                digest = hashlib.sha256(content).hexdigest()[:12]
                files[path.name] = _File(content, media_type, digest)
        return files

    def versioned(self, name: str) -> str:
        """The URL of one of the bundle's files, naming its content."""
        return f"{self.url_path}/{name}?v={self.files[name].digest}"

    def router(self) -> Router:
        """GET (and so HEAD) ``url_path``/<file>."""

        @get("/{file_name:str}", include_in_schema=False, sync_to_thread=False)
        def serve_file(
            file_name: str,
            if_none_match: Annotated[str | None, HeaderParameter(name="if-none-match")] = None,
        ) -> Response[bytes]:
            found = self.files.get(file_name)
            if found is None:
                raise NotFoundError(f"No such file in {self.url_path}.")
            headers = {"etag": found.etag, "cache-control": _CACHE_CONTROL}
            if if_none_match is not None and not _tags(if_none_match).isdisjoint({found.etag, "*"}):
                return Response(b"", status_code=304, headers=headers)
            return Response(found.content, media_type=found.media_type, headers=headers)

        return Router(path=self.url_path, route_handlers=[serve_file])


def _tags(if_none_match: str) -> set[str]:
    """The entity tags an If-None-Match header lists, weak ones compared as strong ones (RFC 9110
    13.1.2); ``*`` matches any."""
    return {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
