"""Serving the static UI (`frontend/`) at `/`.

From a checkout the UI is the repository's top-level `frontend/`; an installed wheel
carries it as package data in `foldline/frontend` (see pyproject's `force-include`).
"""

from __future__ import annotations

import os
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from starlette.responses import FileResponse, Response
from starlette.routing import Match, Mount
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

import foldline
from foldline.server.security import is_api_path

_MISSING_UI_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Foldline</title></head>
<body><h1>Foldline</h1><p>The server is running, but its user interface files were not
found. The HTTP API is available under <code>/api</code>.</p></body></html>
"""


def find_frontend_dir() -> Path | None:
    """The directory holding `index.html`: the checkout's first, then the package data."""
    package_dir = Path(foldline.__file__).resolve().parent
    candidates = (package_dir.parents[1] / "frontend", package_dir / "frontend")
    for candidate in candidates:
        if (candidate / "index.html").is_file():
            return candidate
    return None


MEMORY_FILE_BYTES = 1024 * 1024
"""Files up to this size are answered from memory (every file of the UI is smaller)."""


class _UncachedStaticFiles(StaticFiles):
    """Static files that the browser revalidates on each load, answered from memory.

    The files are small and local, and a stale cached script after an upgrade would talk
    to a changed API; `no-cache` still allows 304 answers through the ETag.

    Opening the app fetches about a hundred files (modules, styles, icons, fonts) before
    the newest message is drawn. Streamed from disk, each costs several hops through the
    thread pool while the browser's six connections wait; kept in memory once read (and
    read again when the file's size or time changes), each is one write.
    """

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self._bodies: dict[str, tuple[int, int, bytes]] = {}

    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        if isinstance(response, FileResponse) and stat_result.st_size <= MEMORY_FILE_BYTES:
            response = Response(
                self._body(str(full_path), stat_result),
                status_code=response.status_code,
                headers=dict(response.headers),
                media_type=response.media_type,
            )
        response.headers["cache-control"] = "no-cache"
        return response

    def _body(self, path: str, stat_result: os.stat_result) -> bytes:
        stamp = (stat_result.st_mtime_ns, stat_result.st_size)
        cached = self._bodies.get(path)
        if cached is not None and cached[:2] == stamp:
            return cached[2]
        body = Path(path).read_bytes()
        self._bodies[path] = (*stamp, body)
        return body


def mount_frontend(app: FastAPI, frontend_dir: Path | None) -> None:
    """Mount the UI at `/`: its files present now by their exact paths before the API's
    routes (none is under `/api`), and the whole directory after every API route, so the
    API always wins."""
    if frontend_dir is None or not (frontend_dir / "index.html").is_file():

        @app.get("/", include_in_schema=False)
        def missing_ui() -> HTMLResponse:
            return HTMLResponse(_MISSING_UI_PAGE)

        return
    files = _UncachedStaticFiles(directory=frontend_dir, html=True)
    # The files there now are matched before the API's routes: the UI asks for about a
    # hundred at start-up, and trying each against every API route first cost about a
    # third of the server's time per file. Anything else (a file added later, a 404)
    # still reaches the mount at the end, after every API route.
    known = {"/"} | {
        "/" + path.relative_to(frontend_dir).as_posix()
        for path in frontend_dir.rglob("*")
        if path.is_file()
    }
    app.router.routes.insert(0, _KnownFiles(files, known))
    app.mount("/", files, name="frontend")


class _KnownFiles(Mount):
    """The UI's files by their exact paths (never an API path)."""

    def __init__(self, files: StaticFiles, paths: set[str]) -> None:
        super().__init__("/", app=files)
        self.paths = frozenset(path for path in paths if not is_api_path(path))

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and scope["path"] in self.paths:
            return super().matches(scope)
        return Match.NONE, {}
