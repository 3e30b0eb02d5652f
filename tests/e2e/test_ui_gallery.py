"""Every main screen at desktop and phone width, in light and dark, as screenshots.

The pictures land in test-artifacts/screenshots/gallery/ (docs/ui.md shows a copy). Each
state is also checked, so a screen that fails to draw fails the test, not just the picture.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from foldline.testing import Reply, call, tool_step

SIZES = {"desktop": (1100, 720), "phone": (390, 844)}


def seed(app) -> str:
    conversation = app.create_conversation("Notes app: storage layer")
    app.script.add(
        Reply(
            text="A first sketch:\n\n- `notes(id, title, body)`\n- `tags(note_id, tag)`\n\n"
            "```python\ndef save(db, note):\n    db.execute('INSERT INTO notes VALUES (?, ?, ?)',"
            " note)\n```\n"
        )
    )
    app.send(conversation["id"], "Sketch the storage layer on SQLite. " * 20)
    app.script.add(
        tool_step(call("getContextStats", {}), text="Let me check the context."),
        Reply(text="About a tenth of the context is used."),
    )
    app.send(conversation["id"], "How full is your context?")
    # A fold only commits when it makes the model's view smaller (the recall tools it
    # brings included): the long answer must be folded, so one exchange follows it.
    app.script.add(Reply(text="Noted. " + "The storage layer keeps every note. " * 80))
    app.send(conversation["id"], "Summarize the plan in detail.")
    app.script.add(Reply(text="Yes: notes and tags, synced later."))
    app.send(conversation["id"], "So two tables for now?")
    app.api("POST", f"/api/conversations/{conversation['id']}/compact", {})
    app.script.add(Reply(text="Each synced field gets a **hybrid logical clock** column."))
    app.send(conversation["id"], "Go with last-writer-wins. What changes in the schema?")
    return conversation["id"]


def shoot(page: Page, ui, name: str) -> None:
    folder = ui.shot("x").parent / "gallery"
    folder.mkdir(exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"))


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_gallery(browser: Browser, ui, scheme, size):
    conversation_id = seed(ui.app)
    width, height = SIZES[size]
    context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
    page = context.new_page()
    base = f"{ui.app.url}/#token={ui.app.token}"
    tag = f"{size}-{scheme}"
    try:
        page.goto(base)
        expect(page.locator("#app")).to_have_attribute("data-state", "empty")
        shoot(page, ui, f"start-{tag}")

        page.goto(f"{base}&c={conversation_id}")
        page.reload()
        expect(page.locator("#app")).to_have_attribute("data-state", "open")
        expect(page.locator(".fold-line.current")).to_be_attached()
        page.locator(".fold-line.current").evaluate(
            "line => line.scrollIntoView({block: 'center'})"
        )
        page.mouse.move(1, height - 1)
        shoot(page, ui, f"chat-{tag}")

        if size == "phone":
            page.locator("#sidebar-button").click()
            expect(page.locator("#sidebar")).to_be_in_viewport(ratio=1)
            shoot(page, ui, f"drawer-{tag}")
            page.keyboard.press("Escape")
            page.locator("#more-button").click()
            expect(page.locator("#more-menu")).to_be_visible()
            shoot(page, ui, f"menu-{tag}")
            page.get_by_role("menuitem", name="Model view").click()
        else:
            page.locator("#model-view-button").click()
        expect(page.locator("#model-view .mv-item").first).to_be_visible()
        shoot(page, ui, f"model-view-{tag}")
        page.keyboard.press("Escape")
        expect(page.locator("#model-view")).to_be_hidden()

        if size == "desktop":
            page.locator("#search").fill("clock")
            expect(page.locator(".item-snippet mark").first).to_be_visible()
            shoot(page, ui, f"search-{tag}")
    finally:
        context.close()
