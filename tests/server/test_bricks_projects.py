"""Project imports checked like conversation imports.

An id like `a/b` could never be opened or deleted; a project import cut short by a crash
(kill -9) left a half project every time, which `foldline doctor` passed. Now the id is
refused, and a project with its conversations stays hidden until the import completes:
a crash leaves nothing visible, the doctor names it, and the next start deletes it.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from foldline.core.messages import assistant, user
from foldline.store import Store, project_export
from foldline.store.doctor import repair


def _exported_project(client: TestClient, store: Store, conversations: int = 3) -> dict[str, Any]:
    project = client.post("/api/projects", json={"name": "Widget"}).json()["id"]
    client.post(f"/api/projects/{project}/notes", json={"title": "N", "text": "note"})
    for n in range(conversations):
        conversation = client.post(
            "/api/conversations", json={"projectId": project, "title": f"C{n}"}
        ).json()["id"]
        store.append_messages(conversation, [user(f"q{n}"), assistant(f"a{n}")])
    exported = client.get(f"/api/projects/{project}/export").json()
    client.delete(f"/api/projects/{project}?conversations=delete&confirmCount={conversations}")
    return exported


@pytest.mark.parametrize("forged", ["a/b", "../x", "a b", "a?b", "%2F", "\u00e9"])
def test_a_project_id_that_cannot_be_a_path_is_refused(
    client: TestClient, store: Store, forged: str
) -> None:
    document = _exported_project(client, store, conversations=1)
    document["project"]["id"] = forged
    imported = client.post("/api/projects/import", json=document)
    assert imported.status_code == 422, imported.text
    assert "project.id" in imported.json()["error"]["message"]
    assert client.get("/api/projects").json()["items"] == []
    assert client.get("/api/conversations").json()["total"] == 0


def test_a_project_import_cut_short_leaves_nothing_visible_and_the_doctor_names_it(
    client: TestClient, store: Store, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = _exported_project(client, store)
    body = client.post("/api/projects/import", json=document)
    assert body.status_code == 201  # a whole import works
    client.delete(f"/api/projects/{body.json()['id']}?conversations=delete&confirmCount=3")

    # kill -9 after the second conversation: no clean-up runs (patched away here).
    real_import = project_export.import_stream
    imported: list[str] = []

    def crashing(*args: Any, **kwargs: Any) -> Any:
        if len(imported) == 2:
            raise KeyboardInterrupt  # stands for the process dying
        record = real_import(*args, **kwargs)
        imported.append(record.id)
        # Meanwhile nothing of the import shows.
        assert client.get("/api/projects").json()["items"] == []
        assert client.get("/api/conversations").json()["total"] == 0
        return record

    monkeypatch.setattr(project_export, "import_stream", crashing)
    monkeypatch.setattr(Store, "discard_project_import", lambda self, project_id: None)
    with pytest.raises(KeyboardInterrupt):
        project_export.import_project(store, io.BytesIO(json.dumps(document).encode()))
    assert len(imported) == 2
    assert client.get("/api/projects").json()["items"] == []
    assert client.get("/api/conversations").json()["total"] == 0
    assert client.get(f"/api/conversations/{imported[0]}").status_code == 404

    database = data_dir / "foldline.db"
    report = repair(database)
    assert report.problems == []
    assert any("project" in line and "half-imported" in line for line in report.repaired_values)
    assert not any("half-imported" in line for line in repair(database).repaired_values)
    # The next start finds nothing left of it.
    reopened = Store(database)
    assert reopened.list_projects() == [] and reopened.list_conversations() == []
    rows = reopened._pool.get().conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    assert rows == 0
    reopened.close()
