"""Accessibility: axe-core finds no serious or critical violation on the main screens, in
light and dark, at desktop and phone width.

axe-core is vendored for the tests only (tests/e2e/vendor/axe-core, MPL-2.0) and injected
into the page; the app's Content-Security-Policy forbids injected scripts, so these pages
bypass it (every other browser test keeps it).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from foldline.testing import Reply, call, tool_step

AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
BLOCKING = {"serious", "critical"}

RUN_AXE = """async () => {
  // Colours mid-transition (a row fading in on hover) are not what a person reads.
  // (Endless ones, the spinners, never finish and are left alone.)
  const finite = document.getAnimations().filter(
    (animation) => animation.effect?.getComputedTiming().endTime !== Infinity);
  await Promise.all(finite.map((animation) => animation.finished));
  const result = await axe.run(document, {
    runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
  });
  return result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 4).map((n) => `${n.target.join(' ')}: ${n.failureSummary}`),
  }));
}"""


def seed(app) -> str:
    conversation = app.create_conversation("Storage layer")
    app.script.add(
        Reply(text="Here is a sketch:\n\n```python\ndef save(db, note):\n    db.add(note)\n```\n")
    )
    app.send(conversation["id"], "Sketch the storage layer " + "please " * 120)
    app.script.add(
        tool_step(call("getContextStats", {}), text="Let me check."),
        Reply(text="Plenty of room left."),
    )
    app.send(conversation["id"], "How full is your context?")
    # A fold only commits when it makes the model's view smaller (the recall tools it
    # brings included): the long answer must be folded, so one exchange follows it.
    app.script.add(Reply(text="Noted. " + "The storage layer keeps every note. " * 80))
    app.send(conversation["id"], "Summarize the plan in detail.")
    app.script.add(Reply(text="Yes: notes and tags."))
    app.send(conversation["id"], "So two tables for now?")
    app.api("POST", f"/api/conversations/{conversation['id']}/compact", {})
    app.send(conversation["id"], "And after the fold?")
    # A second version of the last answer, so the chat shows a version switcher.
    path = f"/api/conversations/{conversation['id']}/messages"
    last = app.api("GET", f"{path}?offset=0&limit=100")["items"][-1]
    app.api("POST", f"{path}/{last['id']}/regenerate")
    return conversation["id"]


def violations(page: Page, screen: str) -> list[str]:
    page.add_script_tag(path=str(AXE))
    found = page.evaluate(RUN_AXE)
    return [
        f"{screen}: [{v['impact']}] {v['id']} {v['help']} :: {v['nodes']}"
        for v in found
        if v["impact"] in BLOCKING
    ]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_serious_violations_on_the_main_screens(browser: Browser, foldline, scheme):
    conversation_id = seed(foldline)
    context = browser.new_context(
        viewport={"width": 1280, "height": 800}, color_scheme=scheme, bypass_csp=True
    )
    page = context.new_page()
    base = f"{foldline.url}/#token={foldline.token}"
    found: list[str] = []
    try:
        page.goto(base)
        expect(page.locator("#app")).to_have_attribute("data-state", "empty")
        found += violations(page, "start")

        page.goto(f"{base}&c={conversation_id}")
        page.reload()
        expect(page.locator("#app")).to_have_attribute("data-state", "open")
        expect(page.locator(".fold-line.current")).to_be_attached()
        page.locator(".tool-card summary").first.click()
        expect(page.locator(".version-switcher")).to_have_count(1)
        found += violations(page, "chat")

        page.locator(".message.user .edit-button").last.click()
        expect(page.locator(".message-editor textarea")).to_be_focused()
        found += violations(page, "editor")
        page.keyboard.press("Escape")

        page.locator("#more-button").click()
        expect(page.locator("#more-menu")).to_be_visible()
        found += violations(page, "menu")
        page.keyboard.press("Escape")

        page.locator("#model-view-button").click()
        expect(page.locator("#model-view .mv-item").first).to_be_visible()
        found += violations(page, "model view")
        page.keyboard.press("Escape")

        page.locator("#settings-button").click()
        expect(page.locator("dialog[open]")).to_be_visible()
        found += violations(page, "settings")
        page.locator('[data-tab="mcp"]').click()
        page.locator("#mcp-add > summary").click()
        page.locator('[data-add-pair="variable"]').click()
        found += violations(page, "settings, Add MCP server")
        page.keyboard.press("Escape")

        page.set_viewport_size({"width": 390, "height": 844})
        page.locator("#sidebar-button").click()
        found += violations(page, "phone drawer")
    finally:
        context.close()
    assert not found, "\n".join(found)
