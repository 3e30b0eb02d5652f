"""Find over HTTP: every matching message of one conversation in display order (other
branches on request), and sidebar snippets that show every term, count the other
matches and read as text, not Markdown."""

from __future__ import annotations

from fastapi.testclient import TestClient

from foldline.core.messages import assistant, user
from foldline.store import Store
from foldline.store.search import snippet


def test_find_lists_every_match_in_display_order(client: TestClient, store: Store) -> None:
    conversation = client.post("/api/conversations", json={}).json()["id"]
    messages = []
    for i in range(120):
        text = f"note {i} about the parser" if i % 30 == 0 else f"note {i}"
        messages += [user(text), assistant("ok")]
    store.append_messages(conversation, messages)
    found = client.get(f"/api/conversations/{conversation}/search", params={"q": "parser"})
    assert found.status_code == 200
    items = found.json()["items"]
    assert [item["index"] for item in items] == [0, 60, 120, 180]
    assert all(item["onActivePath"] for item in items)
    assert "parser" in items[0]["snippet"]
    assert client.get(f"/api/conversations/{conversation}/search").status_code == 422
    assert client.get("/api/conversations/nope/search", params={"q": "x"}).status_code == 404


def test_find_includes_other_branches_on_request(client: TestClient, parse_sse) -> None:
    base = client.post("/api/conversations", json={}).json()["id"]
    path = f"/api/conversations/{base}"
    client.post(f"{path}/messages", json={"content": "the walrus plan"})
    first = client.get(f"{path}/messages").json()["items"][0]
    client.post(f"{path}/messages/{first['id']}/edit", json={"content": "the other plan"})
    shown = client.get(f"{path}/search", params={"q": "walrus"}).json()["items"]
    assert shown == []
    every = client.get(f"{path}/search", params={"q": "walrus", "branches": "true"}).json()
    assert [item["onActivePath"] for item in every["items"]] == [False]


def test_sidebar_hit_counts_matches_and_keeps_every_term(client: TestClient, store: Store) -> None:
    conversation = client.post("/api/conversations", json={"title": "Notes"}).json()["id"]
    filler = "lorem ipsum dolor sit amet " * 20
    store.append_messages(
        conversation,
        [
            user("alpha one"),
            assistant("alpha two"),
            user("alpha three"),
            assistant(f"alpha at the start, {filler} and omega at the end"),
        ],
    )
    hit = client.get("/api/conversations", params={"q": "alpha"}).json()["items"][0]["searchHit"]
    assert hit["matchCount"] == 4
    both = client.get("/api/conversations", params={"q": "alpha omega"}).json()["items"][0]
    text = both["searchHit"]["snippet"]
    assert "alpha" in text and "omega" in text, text


def test_snippets_read_as_text_not_markdown() -> None:
    text = "Here:\n\n```python\ndef parse(x):\n    return x\n```\n\n**Bold** `parse` done"
    shown = snippet(text, "parse")
    assert "```" not in shown and "**" not in shown and "`" not in shown, shown
    assert "def parse(x)" in shown
