"""Hostile values that once broke the app for good: stored once, then every read failed.

Each test sends what an attacker (a page, a crafted file, a model) could send and checks
that it is refused with a 4xx, or stored in a form every later read can serve, and that
a row damaged by an older version is served with a notice and repaired by the doctor.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from foldline.core.messages import assistant, user
from foldline.store import Store
from foldline.store.doctor import repair

JSON = {"content-type": "application/json"}


def deep_array(depth: int) -> str:
    return "[" * depth + "]" * depth


HOSTILE_SETTINGS = {
    "deep array": '{"x": ' + deep_array(300) + "}",
    "lone surrogate": '{"y": "\\ud800"}',
    "lone surrogate key": '{"\\udfff": 1}',
    "too large": json.dumps({"z": "x" * 70_000}),
}


def _lists(client: TestClient) -> None:
    listed = client.get("/api/conversations")
    assert listed.status_code == 200, listed.text
    searched = client.get("/api/conversations", params={"q": "a"})
    assert searched.status_code == 200, searched.text


@pytest.mark.parametrize("settings", HOSTILE_SETTINGS.values(), ids=HOSTILE_SETTINGS.keys())
def test_hostile_settings_are_refused_and_nothing_is_stored(
    client: TestClient, settings: str
) -> None:
    created = client.post("/api/conversations", content=f'{{"settings": {settings}}}', headers=JSON)
    assert created.status_code == 422, created.text
    assert "settings" in created.json()["error"]["message"]
    conversation = client.post("/api/conversations", json={}).json()["id"]
    patched = client.patch(
        f"/api/conversations/{conversation}", content=f'{{"settings": {settings}}}', headers=JSON
    )
    assert patched.status_code == 422, patched.text
    _lists(client)
    assert client.get("/api/conversations").json()["total"] == 1


@pytest.mark.parametrize("settings", HOSTILE_SETTINGS.values(), ids=HOSTILE_SETTINGS.keys())
def test_hostile_settings_in_an_import_are_refused(
    client: TestClient, store: Store, settings: str
) -> None:
    conversation = client.post("/api/conversations", json={"title": "a"}).json()["id"]
    store.append_messages(conversation, [user("hi"), assistant("hello")])
    exported = client.get(f"/api/conversations/{conversation}/export").text
    forged = exported.replace('"settings":{}', f'"settings":{settings}', 1)
    assert forged != exported
    imported = client.post("/api/conversations/import", content=forged, headers=JSON)
    assert imported.status_code == 422, imported.text
    assert "conversation" in imported.json()["error"]["message"]
    _lists(client)
    assert client.get("/api/conversations").json()["total"] == 1


def test_the_store_refuses_what_it_could_not_read_back(store: Store) -> None:
    with pytest.raises(ValueError, match="settings"):
        store.create_conversation(settings={"x": float("inf")})
    conversation = store.create_conversation()
    with pytest.raises(ValueError, match="settings"):
        store.update_conversation(conversation.id, settings={"x": "\ud800"})
    assert store.get_conversation(conversation.id).settings == {}


BAD_ROWS = {
    "deep array": json.dumps({"x": json.loads(deep_array(300))}),
    "lone surrogate": '{"y": "\\ud800"}',
    "not json": "{nope",
    "not an object": "[1, 2]",
}


@pytest.mark.parametrize("stored", BAD_ROWS.values(), ids=BAD_ROWS.keys())
def test_a_bad_settings_row_from_an_older_version_is_served_with_a_notice_then_repaired(
    client: TestClient, store: Store, data_dir: Path, stored: str
) -> None:
    bad = client.post("/api/conversations", json={"title": "bad"}).json()["id"]
    good = client.post("/api/conversations", json={"title": "good"}).json()["id"]
    store.append_messages(bad, [user("hi"), assistant("hello")])
    database = data_dir / "foldline.db"
    with sqlite3.connect(database) as conn:
        conn.execute("UPDATE conversations SET settings = ? WHERE id = ?", (stored, bad))
    conn.close()

    listed = client.get("/api/conversations")
    assert listed.status_code == 200, listed.text
    by_id = {item["id"]: item for item in listed.json()["items"]}
    assert by_id[bad]["settings"] == {} and "settings" in by_id[bad]["notice"]
    assert by_id[good]["notice"] is None
    one = client.get(f"/api/conversations/{bad}")
    assert one.status_code == 200 and one.json()["notice"]
    assert client.get(f"/api/conversations/{bad}/messages").status_code == 200
    assert client.get(f"/api/conversations/{bad}/export").status_code == 200
    # Saving new settings replaces the bad value.
    patched = client.patch(f"/api/conversations/{bad}", json={"settings": {"theme": "dark"}})
    assert patched.status_code == 200 and patched.json()["notice"] is None

    with sqlite3.connect(database) as conn:
        conn.execute("UPDATE conversations SET settings = ? WHERE id = ?", (stored, bad))
    conn.close()
    report = repair(database)
    assert report.problems == []
    assert report.repaired_values == [f"conversation {bad}: settings reset to {{}}"]
    assert repair(database).repaired_values == []
    assert client.get(f"/api/conversations/{bad}").json()["notice"] is None


def test_imported_pins_over_the_cap_keep_the_newest_and_say_so(
    client: TestClient, store: Store, chat_service
) -> None:
    conversation = client.post("/api/conversations", json={"title": "pins"}).json()["id"]
    records = store.append_messages(
        conversation,
        [
            message
            for n in range(15)
            for message in (user(f"question {n} " + "word " * 600), assistant(f"answer {n}"))
        ],
    )
    for record in records[::2]:  # every question, past the cap: only an import could
        store.set_pinned(conversation, record.id, True)
    before = chat_service.load_context(conversation)
    assert before.pinned_tokens > before.pins_cap
    document = client.get(f"/api/conversations/{conversation}/export").json()

    imported = client.post("/api/conversations/import", json=document)
    assert imported.status_code == 201, imported.text
    notice = imported.json()["notice"]
    assert notice and "unpinned" in notice and "15 pinned messages" in notice
    copy = imported.json()["id"]
    after = chat_service.load_context(copy)
    assert 0 < after.pinned_tokens <= after.pins_cap
    kept = [pin.seq for pin in store.list_pins(copy)]
    # Pinned in order, so the newest pins are the latest questions.
    assert kept == sorted(kept) and kept[-1] == 28
    assert len(store.list_messages(copy, limit=100)) == 30
