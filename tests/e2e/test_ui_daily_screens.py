"""The screens docs/ui.md shows for everyday use: onboarding, Settings, and a conversation
with pins and hand-offs, at 390 px and 1440 px wide, light and dark.

The pictures land in test-artifacts/screenshots/daily/ (docs/ui/ holds a copy). Each
screen is checked before it is taken, so a screen that fails to draw fails the test."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from foldline.testing import Reply

SIZES = {"wide": (1440, 900), "phone": (390, 844)}


def shoot(page: Page, ui, name: str) -> None:
    folder = ui.shot("x").parent / "daily"
    folder.mkdir(exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"))


def seed(app) -> str:
    cid = app.create_conversation("Trip planning: Lisbon in May")["id"]
    app.script.add(Reply(text="Noted: **vegetarian**, and no flights before 9 am."))
    app.send(cid, "Two rules for everything we plan: I am vegetarian, and no flights before 9 am.")
    app.script.add(
        Reply(
            text="Day one:\n\n1. Alfama walk in the morning\n2. Lunch at a vegetarian tasca\n"
            "3. Sunset at Miradouro da Senhora do Monte"
        )
    )
    app.send(cid, "Sketch day one.")
    app.script.add(Reply(text="Day two goes to Sintra by the 10:11 train."))
    app.send(cid, "And day two?")
    first = app.api("GET", f"/api/conversations/{cid}/messages?limit=1")["items"][0]
    app.api("POST", f"/api/conversations/{cid}/messages/{first['id']}/pin")
    app.api("POST", f"/api/conversations/{cid}/handoff", {"instructions": "Keep both rules."})
    return cid


def page_for(browser: Browser, size: str, scheme: str) -> Page:
    width, height = SIZES[size]
    context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
    return context.new_page()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", ["wide", "phone"])
def test_daily_screens(browser: Browser, start_foldline, make_ui, size, scheme):
    tag = f"{size}-{scheme}"
    # Onboarding: nothing configured; the fake provider answers as a local server.
    fresh = start_foldline("# nothing configured yet\n")
    ui = make_ui(fresh)
    page = page_for(browser, size, scheme)
    try:
        page.goto(f"{fresh.url}/#token={fresh.token}")
        expect(page.locator('#onboarding .choice[data-server="ollama"]')).to_be_visible()
        shoot(page, ui, f"onboarding-{tag}")
    finally:
        page.context.close()

    app = start_foldline(None, data_dir=fresh.data_dir.parent / "configured")
    cid = seed(app)
    page = page_for(browser, size, scheme)
    try:
        page.goto(f"{app.url}/#token={app.token}&c={cid}")
        expect(page.locator("#pinned-list .pinned-jump")).to_contain_text("Two rules")
        expect(page.locator("#handoff-links")).to_contain_text("Continued in")
        expect(page.locator(".message.assistant").last).to_contain_text("Sintra")
        shoot(page, ui, f"conversation-{tag}")
        if size == "phone":
            # The bars above and below the chat leave it most of the screen.
            bars = sum(
                page.locator(selector).bounding_box()["height"]
                for selector in ("#pinned-list", "#handoff-links")
            )
            assert bars <= 0.12 * SIZES["phone"][1], bars

        if size == "phone":
            page.locator("#sidebar-button").click()
        page.locator("#settings-button").click()
        dialog = page.locator("#settings-dialog")
        dialog.locator('[data-tab="models"]').click()
        expect(dialog.locator('.model-card[data-model="fake-model"]')).to_be_visible()
        shoot(page, ui, f"settings-{tag}")
    finally:
        page.context.close()
