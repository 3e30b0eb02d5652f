"""Keyboard only: every main action of a 100-message conversation within 15 key presses.

The conversation and the sidebar are one Tab stop each (a roving tabindex: the arrows move
between messages or rows, → steps into an entry's buttons), two skip links lead to the
message box and the conversation, and Model view, Compact, Settings, a new conversation,
the model picker and search have shortcuts, listed in the `?` sheet.
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from foldline.core.messages import assistant, user
from foldline.store import Store

LIMIT = 15

TABBABLE_IN = """(root) => [...document.querySelector(root).querySelectorAll('*')].filter((e) =>
  e.tabIndex >= 0 && e.getClientRects().length > 0 && !e.closest('[hidden]')
  && !e.matches('.tool-output, pre')).length"""


def seeded(start_foldline, tmp_path: Path):
    data_dir = tmp_path / "keys"
    data_dir.mkdir()
    with Store(data_dir / "foldline.db") as store:
        store.create_conversation(title="Older one")
        conversation = store.create_conversation(title="Hundred messages")
        messages = []
        for n in range(50):
            messages += [user(f"Question {n}"), assistant(f"Answer {n}.")]
        store.append_messages(conversation.id, messages)
    return start_foldline(None, data_dir=data_dir), conversation.id


def press_until(page: Page, key: str, selector: str, start: int = 0) -> int:
    """Press `key` until the focus is on `selector`; returns the presses (with `start`)."""
    count = start
    while count < LIMIT:
        page.keyboard.press(key)
        count += 1
        if page.evaluate("(s) => document.activeElement?.matches(s) ?? false", selector):
            return count
    raise AssertionError(f"{selector} not reached within {LIMIT} presses of {key}")


def fresh(page: Page) -> None:
    """Nothing focused (for a shortcut)."""
    page.keyboard.press("Escape")
    page.evaluate("() => document.activeElement?.blur()")


def reloaded(page: Page) -> None:
    """The page as just opened: Tab starts from its top."""
    page.reload()
    expect(page.locator("#app")).to_have_attribute("data-state", "open")
    expect(page.locator('.message[data-index="99"]')).to_be_visible()


def test_every_main_action_within_15_key_presses(start_foldline, make_ui, tmp_path):
    app, conversation_id = seeded(start_foldline, tmp_path)
    ui = make_ui(app)
    ui.open(f"&c={conversation_id}")
    page = ui.page
    expect(page.locator("#app")).to_have_attribute("data-state", "open")
    expect(page.locator('.message[data-index="99"]')).to_be_visible()

    # One Tab stop for the whole conversation and one for the whole sidebar list.
    assert page.evaluate(TABBABLE_IN, "#chat-inner") == 1
    assert page.evaluate(TABBABLE_IN, "#conversation-list") == 1

    # An opened conversation puts the focus in the message box (0 presses).
    expect(page.locator("#composer-input")).to_be_focused()

    # The conversation: Ctrl+Shift+E, or Shift+Tab from the message box, or the second
    # skip link; each lands on the newest message. ↑ reads back, → reaches its buttons,
    # Esc returns, Tab leaves the list at once.
    assert press_until(page, "Shift+Tab", ".message") <= 3
    newest = page.locator('.message[data-index="99"]')
    expect(newest).to_be_focused()
    fresh(page)
    page.keyboard.press("Control+Shift+E")
    expect(newest).to_be_focused()
    reloaded(page)
    # (The skip links are the page's first two stops, for a Tab from the top.)
    press_until(page, "Shift+Tab", "#skip-to-conversation")
    page.keyboard.press("Enter")
    expect(newest).to_be_focused()
    page.keyboard.press("ArrowUp")
    expect(page.locator('.message[data-index="98"]')).to_be_focused()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("() => document.activeElement.closest('.message')?.dataset.index") == "99"
    assert page.evaluate("() => document.activeElement.tagName") == "BUTTON"
    page.keyboard.press("Escape")
    expect(newest).to_be_focused()
    page.keyboard.press("Tab")
    assert page.evaluate("() => !document.activeElement.closest('#chat-inner')")

    # The first skip link leads back to the message box.
    reloaded(page)
    press_until(page, "Shift+Tab", "#skip-to-conversation")
    page.keyboard.press("Shift+Tab")
    expect(page.locator("#skip-to-composer")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#composer-input")).to_be_focused()

    # The ⋯ menu, from the message box by Shift+Tab.
    reloaded(page)
    presses = press_until(page, "Shift+Tab", "#more-button")
    page.keyboard.press("Enter")
    expect(page.locator("#more-menu")).to_be_visible()
    assert presses + 1 <= LIMIT
    page.keyboard.press("Escape")

    # The other conversation in the sidebar: Tab to the list, ↓, Enter.
    reloaded(page)
    presses = press_until(page, "Shift+Tab", ".conversation-item")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    assert presses + 2 <= LIMIT
    expect(page.locator("#conversation-title")).to_have_text("Older one")
    ui.open(f"&c={conversation_id}")
    expect(page.locator("#app")).to_have_attribute("data-state", "open")

    # One shortcut each.
    fresh(page)
    page.keyboard.press("Control+Shift+M")
    expect(page.locator("#model-view")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#model-view")).to_be_hidden()

    fresh(page)
    page.keyboard.press("Control+Shift+L")
    expect(page.locator("#compact-dialog")).to_be_visible()
    page.keyboard.press("Escape")

    fresh(page)
    page.keyboard.press("Control+Shift+P")
    expect(page.locator("#model-picker")).to_be_visible()
    expect(page.locator(".model-filter")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.locator("#model-picker")).to_have_count(0)
    expect(page.locator("#model-picker-button")).to_be_focused()

    fresh(page)
    page.keyboard.press("Control+,")
    expect(page.locator("#settings-dialog")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#settings-dialog")).to_have_count(0)

    fresh(page)
    page.keyboard.press("Control+k")
    expect(page.locator("#search")).to_be_focused()

    fresh(page)
    page.keyboard.press("?")
    sheet = page.locator("#shortcut-sheet")
    expect(sheet).to_be_visible()
    for action in ("Model view", "Compact", "Settings", "New conversation", "Choose the model"):
        expect(sheet).to_contain_text(action)
    ui.shot("shortcut-sheet")
    page.keyboard.press("Escape")

    fresh(page)
    page.keyboard.press("Control+Shift+O")
    expect(page.locator("#app")).to_have_attribute("data-state", "empty")
    expect(page.locator("#composer-input")).to_be_focused()
