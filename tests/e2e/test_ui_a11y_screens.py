"""Accessibility on the screens of the first minutes and of the keyboard: axe-core finds
no serious or critical violation on onboarding (both steps), the model picker, the
shortcut sheet, every Settings tab, the projects (sidebar and dialog), the fold line, and
the phone's top bar and drawer, in light and dark: the system's scheme, and the theme
chosen in Settings → General against the system's (data-theme).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from foldline.testing import Reply, call, tool_step

AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
BLOCKING = {"serious", "critical"}

RUN_AXE = """async () => {
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


def violations(page: Page, screen: str) -> list[str]:
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found = page.evaluate(RUN_AXE)
    return [
        f"{screen}: [{v['impact']}] {v['id']} {v['help']} :: {v['nodes']}"
        for v in found
        if v["impact"] in BLOCKING
    ]


def seed(app) -> str:
    """As test_ui_a11y.py's: a code answer, a tool call, a long answer, then a fold; the
    conversation then moves into a project."""
    project = app.api("POST", "/api/projects", {"name": "Bridge"})
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
    app.api("PATCH", f"/api/conversations/{conversation['id']}", {"projectId": project["id"]})
    return conversation["id"]


# (the context's colour scheme, the theme chosen in Settings: None = the system's)
SCHEMES = [("light", None), ("dark", None), ("light", "dark"), ("dark", "light")]


@pytest.mark.parametrize(("scheme", "theme"), SCHEMES)
def test_the_first_minutes_screens_have_no_serious_violations(
    browser: Browser, start_foldline, scheme, theme
):
    app = start_foldline("")
    context = browser.new_context(
        viewport={"width": 1280, "height": 800}, color_scheme=scheme, bypass_csp=True
    )
    page = context.new_page()
    if theme:
        page.add_init_script(f"localStorage.setItem('foldline.theme', '{theme}')")
    found: list[str] = []
    try:
        page.goto(f"{app.url}/#token={app.token}")
        expect(page.locator('#onboarding .choice[data-server="ollama"]')).to_be_visible()
        found += violations(page, "onboarding")
        custom = page.locator('#onboarding .choice[data-provider="custom"]')
        custom.locator("#custom-provider-url").fill(app.fake.openai_url)
        custom.locator("button", has_text="Continue").click()
        expect(page.locator("#onboarding-model")).to_be_visible()
        found += violations(page, "onboarding, choose a model")
        page.locator("#onboarding-start").click()
        expect(page.locator("#onboarding")).to_be_hidden()
        found += violations(page, "new chat with its model")
        page.locator("#start-model-picker").click()
        expect(page.locator("#model-picker")).to_be_visible()
        found += violations(page, "model picker")
        page.keyboard.press("Escape")
        page.keyboard.press("Control+/")
        expect(page.locator("#shortcut-sheet")).to_be_visible()
        found += violations(page, "shortcut sheet")
    finally:
        context.close()
    assert not found, "\n".join(found)


@pytest.mark.parametrize(("scheme", "theme"), SCHEMES)
def test_settings_projects_fold_line_and_phone_have_no_serious_violations(
    browser: Browser, foldline, scheme, theme
):
    conversation_id = seed(foldline)
    context = browser.new_context(
        viewport={"width": 1440, "height": 900}, color_scheme=scheme, bypass_csp=True
    )
    page = context.new_page()
    if theme:
        page.add_init_script(f"localStorage.setItem('foldline.theme', '{theme}')")
    found: list[str] = []
    try:
        page.goto(f"{foldline.url}/#token={foldline.token}&c={conversation_id}")
        expect(page.locator("#app")).to_have_attribute("data-state", "open")
        expect(page.locator(".fold-line.current")).to_be_attached()
        page.locator(".fold-line.current").scroll_into_view_if_needed()
        found += violations(page, "fold line")

        page.locator("#settings-button").click()
        for tab in ("general", "providers", "models", "compaction", "mcp"):
            page.locator(f'[data-tab="{tab}"]').click()
            expect(page.locator(f'[data-tab="{tab}"]')).to_have_attribute("aria-selected", "true")
            if tab == "models":
                expect(page.locator("#available-models")).to_be_visible()
            found += violations(page, f"settings, {tab}")
        page.keyboard.press("Escape")
        expect(page.locator("#settings-dialog")).to_have_count(0)

        head = page.locator(".project-group .project-head").first
        head.hover()
        found += violations(page, "projects in the sidebar")
        head.get_by_role("button", name="Instructions, files and notes").click()
        expect(page.locator("#project-dialog")).to_be_visible()
        found += violations(page, "project dialog")
        page.keyboard.press("Escape")

        page.set_viewport_size({"width": 390, "height": 844})
        expect(page.locator("#model-picker-button")).to_be_visible()
        found += violations(page, "phone, conversation")
        page.locator("#sidebar-button").click()
        expect(page.locator("#sidebar")).to_be_visible()
        found += violations(page, "phone drawer")
    finally:
        context.close()
    assert not found, "\n".join(found)
