"""The UI's files: answered from memory, revalidated by ETag, never stale after a change;
and every module the page imports is announced up front (`<link rel="modulepreload">`)."""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from fastapi.testclient import TestClient

from foldline.server.static import find_frontend_dir

IMPORT = re.compile(r'^\s*(?:import|export)\s[^;]*?\sfrom\s+"([^"]+)"', re.MULTILINE | re.DOTALL)
# A module loaded beside the page (`import("...")`) is preloaded too, so it is there early.
DYNAMIC_IMPORT = re.compile(r'\bimport\(\s*"([^"]+)"\s*\)')


def test_a_file_is_revalidated_and_a_changed_file_is_served_changed(
    anonymous: TestClient, frontend_dir: Path
) -> None:
    first = anonymous.get("/app.js")
    assert first.status_code == 200
    assert first.text == "export const ok = true;\n"
    assert first.headers["cache-control"] == "no-cache"
    assert first.headers["content-type"].startswith("text/javascript")
    assert int(first.headers["content-length"]) == len(first.content)
    unchanged = anonymous.get("/app.js", headers={"If-None-Match": first.headers["etag"]})
    assert unchanged.status_code == 304

    # Kept in memory, but a new version on disk (other size and time) is what is served.
    script = frontend_dir / "app.js"
    script.write_text("export const ok = 'changed';\n")
    stat = script.stat()
    os.utime(script, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    changed = anonymous.get("/app.js", headers={"If-None-Match": first.headers["etag"]})
    assert changed.status_code == 200
    assert changed.text == "export const ok = 'changed';\n"
    assert changed.headers["etag"] != first.headers["etag"]
    assert anonymous.get("/missing.js").status_code == 404


def test_a_file_added_after_start_is_served_and_the_api_still_answers(
    anonymous: TestClient, frontend_dir: Path
) -> None:
    """The files present at start are matched before the API's routes; the rest after."""
    (frontend_dir / "later.js").write_text("export const later = 1;\n")
    assert anonymous.get("/later.js").text == "export const later = 1;\n"
    assert anonymous.get("/").status_code == 200
    assert anonymous.get("/api/health").json()["status"] == "ok"
    assert anonymous.get("/api/conversations").status_code == 401


def static_imports(frontend: Path, entry: str) -> list[str]:
    """Every module `entry` imports (or loads with `import()`), directly or not, as paths
    under `frontend`."""
    seen: list[str] = []
    waiting = [entry]
    while waiting:
        module = waiting.pop()
        if module in seen:
            continue
        seen.append(module)
        source = (frontend / module).read_text(encoding="utf-8")
        for target in IMPORT.findall(source) + DYNAMIC_IMPORT.findall(source):
            waiting.append(os.path.normpath(PurePosixPath(module).parent / target))
    return seen[1:]


def test_every_module_of_the_page_is_preloaded() -> None:
    """Without its link the browser finds a module only once its importer has arrived:
    one more round of requests before anything is drawn."""
    frontend = find_frontend_dir()
    assert frontend is not None
    page = (frontend / "index.html").read_text(encoding="utf-8")
    preloaded = re.findall(r'<link rel="modulepreload" href="([^"]+)"', page)
    imported = static_imports(frontend, "js/main.js")
    assert len(imported) > 40 and "vendor/marked/marked.esm.js" in imported
    assert "vendor/highlight/highlight.min.js" in imported
    assert sorted(set(imported) - set(preloaded)) == []
    assert sorted(set(preloaded) - set(imported)) == []
