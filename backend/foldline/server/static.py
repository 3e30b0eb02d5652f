"""Serving the static UI (`frontend/`) at `/`.

From a checkout the UI is the repository's top-level `frontend/`; an installed wheel
carries it as package data in `foldline/frontend` (see pyproject's `force-include`).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

import foldline

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


class _UncachedStaticFiles(StaticFiles):
    """Static files that the browser revalidates on each load.

    The files are small and local, and a stale cached script after an upgrade would talk
    to a changed API; `no-cache` still allows 304 answers through the ETag.
    """

    def file_response(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        response = super().file_response(*args, **kwargs)
        response.headers["cache-control"] = "no-cache"
        return response


def mount_frontend(app: FastAPI, frontend_dir: Path | None) -> None:
    """Mount the UI at `/` (after every API route, so the API always wins)."""
    if frontend_dir is None or not (frontend_dir / "index.html").is_file():

        @app.get("/", include_in_schema=False)
        def missing_ui() -> HTMLResponse:
            return HTMLResponse(_MISSING_UI_PAGE)

        return
    app.mount("/", _UncachedStaticFiles(directory=frontend_dir, html=True), name="frontend")
