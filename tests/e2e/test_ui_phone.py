"""Phones and narrow windows: nothing off screen, the sidebar as a drawer, the top bar's
actions in the ⋯ menu, Model view as a full-width panel closed by Esc."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

# Every visible element of the app whose box leaves the viewport horizontally.
OFF_SCREEN = """() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  for (const element of document.querySelectorAll('#app *, #notices *')) {
    const box = element.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    const style = getComputedStyle(element);
    if (style.visibility === 'hidden') continue;
    // Content scrolled inside its own box (a code block, a long line) is not off screen.
    if (element.closest('pre, .chat-scroll .md, .mv-list')) continue;
    if (box.left < -1 || box.right > width + 1) {
      out.push(`${element.tagName.toLowerCase()}#${element.id}.${element.className} ` +
               `${Math.round(box.left)}..${Math.round(box.right)}`);
    }
  }
  return { out, scrollWidth: document.documentElement.scrollWidth, width };
}"""


def assert_on_screen(page: Page, label: str) -> None:
    result = page.evaluate(OFF_SCREEN)
    assert result["scrollWidth"] <= result["width"], (label, result)
    assert not result["out"], (label, result["out"][:10])


@pytest.mark.parametrize(("width", "height"), [(390, 844), (768, 1024)])
def test_nothing_is_off_screen_and_everything_is_reachable(ui, width, height):
    page = ui.page
    page.set_viewport_size({"width": width, "height": height})
    conversation = ui.app.create_conversation("A conversation with a rather long title here")
    ui.app.send(conversation["id"], "Hello with a longer question " * 6)
    ui.app.create_conversation("Another one")
    ui.open(f"&c={conversation['id']}")
    expect(page.locator(".message.assistant")).to_have_count(1)
    assert_on_screen(page, "open")
    ui.shot(f"phone-{width}-chat")

    phone = width < 720
    sidebar = page.locator("#sidebar")
    if phone:
        # The sidebar is a drawer behind a visible button.
        expect(sidebar).not_to_be_in_viewport()
        toggle = page.locator("#sidebar-button")
        expect(toggle).to_be_visible()
        toggle.click()
        expect(sidebar).to_be_in_viewport(ratio=1)
        expect(toggle).to_have_attribute("aria-expanded", "true")
        assert_on_screen(page, "drawer")
        ui.shot(f"phone-{width}-drawer")
        page.keyboard.press("Escape")
        # Closed: slid out and hidden once its short animation ends.
        expect(sidebar).to_be_hidden()
        toggle.click()
        page.locator(".conversation-item", has_text="Another one").click()
        expect(page.locator("#conversation-title")).to_have_text("Another one")
        expect(sidebar).to_be_hidden()
        toggle.click()
        page.locator(".conversation-item", has_text="rather long").click()
        expect(page.locator(".message.assistant")).to_have_count(1)
        expect(sidebar).to_be_hidden()
    else:
        expect(sidebar).to_be_in_viewport()
        expect(page.locator("#sidebar-button")).to_be_hidden()

    # The ⋯ menu opens on screen, from the keyboard too.
    expect(page.locator("#composer-input")).to_be_focused()
    more = page.locator("#more-button")
    more.focus()
    page.keyboard.press("ArrowDown")
    menu = page.locator("#more-menu")
    expect(menu).to_be_visible()
    assert_on_screen(page, "menu")
    ui.shot(f"phone-{width}-menu")
    first = menu.locator("button:visible").first
    expect(first).to_be_focused()
    page.keyboard.press("Escape")
    expect(menu).to_be_hidden()
    expect(more).to_be_focused()

    # Model view: from the top bar, or from the menu on a phone; on screen; Esc closes it.
    if phone:
        more.click()
        menu.get_by_role("menuitem", name="Model view").click()
    else:
        page.locator("#model-view-button").click()
    view = page.locator("#model-view")
    expect(view).to_be_visible()
    expect(view.locator(".mv-item").first).to_be_visible()
    assert_on_screen(page, "model view")
    ui.shot(f"phone-{width}-model-view")
    page.keyboard.press("Escape")
    expect(view).to_be_hidden()
