"""Rows an older version stored and no answer could carry (settings nested 300 deep, a
tool call's arguments past the parser's limit): the list, the conversation and the chat
still open, and the person is told what was set aside."""

from __future__ import annotations

import json
import sqlite3

from playwright.sync_api import expect

from foldline.core.messages import ToolCallPart, assistant, user
from foldline.store import Store


def test_a_conversation_with_unreadable_stored_values_opens_with_a_notice(
    start_foldline, make_ui, tmp_path
):
    data_dir = tmp_path / "bricked"
    data_dir.mkdir()
    with Store(data_dir / "foldline.db") as store:
        bad = store.create_conversation(title="Stored by an older version")
        store.create_conversation(title="A sound one")
        store.append_messages(
            bad.id,
            [
                user("call the tool"),
                assistant("calling", ToolCallPart(id="c1", name="x", input={"a": 1})),
                user("and after it?"),
                assistant("Still here."),
            ],
        )
    deep = "[" * 300 + "]" * 300
    arguments = {"a": 1}
    for _ in range(220):
        arguments = {"a": arguments}
    parts = [
        {"kind": "text", "text": "calling"},
        {"kind": "tool-call", "id": "c1", "name": "x", "input": arguments},
    ]
    with sqlite3.connect(data_dir / "foldline.db") as conn:
        conn.execute(
            "UPDATE conversations SET settings = ? WHERE id = ?", (f'{{"x":{deep}}}', bad.id)
        )
        conn.execute(
            "UPDATE messages SET parts = ? WHERE conversation_id = ? AND seq = 1",
            (json.dumps(parts), bad.id),
        )
    conn.close()
    ui = make_ui(start_foldline(None, data_dir=data_dir))
    page = ui.page
    ui.open()
    expect(page.locator(".conversation-item")).to_have_count(2)
    page.locator(".conversation-item", has_text="Stored by an older version").click()
    expect(page.locator("#app")).to_have_attribute("data-state", "open")
    expect(page.locator(".notice")).to_contain_text("could not be read back")
    expect(page.locator('.message[data-index="3"]')).to_contain_text("Still here.")
    expect(page.locator('.message[data-index="1"]')).to_contain_text("calling")
    ui.shot("bricks-unreadable-settings")
