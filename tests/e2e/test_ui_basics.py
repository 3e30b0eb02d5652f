"""Chat basics: "+" saves nothing until the first message, a stale Continue goes away,
the skip link reaches the composer, the action is called Compact everywhere, and a search
result shows its snippet and opens the conversation at the match."""

from __future__ import annotations

import re

from fake_model_config import FAKE_MODEL_CONFIG
from playwright.sync_api import expect

from foldline.core.messages import assistant, user
from foldline.store import Store
from foldline.testing import Reply


def test_new_conversation_is_saved_only_with_its_first_message(ui):
    existing = ui.app.create_conversation("Existing")
    ui.app.send(existing["id"], "hello")
    ui.open(f"&c={existing['id']}")
    page = ui.page
    page.locator("#new-conversation").click()
    expect(page.locator("#app")).to_have_attribute("data-state", "empty")
    expect(page.locator("#composer-input")).to_be_focused()
    page.locator("#new-conversation").click()
    assert len(ui.app.api("GET", "/api/conversations")["items"]) == 1
    ui.send("A first question")
    items = ui.app.api("GET", "/api/conversations")["items"]
    assert [item["title"] for item in items] == ["A first question", "Existing"]
    expect(page.locator(".conversation-item")).to_have_count(2)


def test_continue_is_offered_only_on_the_last_interrupted_answer(ui):
    ui.app.script.add(Reply(text="".join(f"w{i} " for i in range(200)), chunk_chars=4, delay=0.05))
    ui.open()
    page = ui.page
    page.locator("#composer-input").fill("Write a lot")
    page.locator("#composer-input").press("Enter")
    expect(page.locator(".message.assistant.streaming")).to_contain_text("w5 ")
    page.keyboard.press("Escape")
    ui.idle()
    interrupted = page.locator('.message.assistant[data-status="interrupted"]')
    expect(interrupted.locator(".retry-button")).to_have_text("Continue")
    ui.send("Something else")
    expect(page.locator(".message.assistant")).to_have_count(2)
    expect(interrupted.locator(".retry-button")).to_have_count(0)
    expect(interrupted.locator(".badge")).to_have_text("Interrupted")


def test_skip_link_reaches_the_composer_and_compact_is_one_word(ui):
    conversation = ui.app.create_conversation("Skip")
    ui.app.send(conversation["id"], "hello")
    ui.open()
    page = ui.page
    page.keyboard.press("Tab")
    skip = page.locator("#skip-to-composer")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()
    page.keyboard.press("Enter")
    expect(page.locator("#composer-input")).to_be_focused()
    assert "composer-input" not in page.url

    page.locator(".conversation-item").first.click()
    page.locator("#compact-button").click()
    dialog = page.locator("#compact-dialog")
    expect(dialog).to_contain_text("Compact the conversation")
    expect(dialog.locator("#compact-confirm")).to_have_text("Compact now")
    assert "Fold now" not in dialog.inner_text()


def test_search_shows_a_snippet_and_opens_the_conversation_at_the_match(
    start_foldline, make_ui, tmp_path
):
    data_dir = tmp_path / "search"
    data_dir.mkdir()
    with Store(data_dir / "foldline.db") as store:
        conversation = store.create_conversation(title="Long talk")
        messages = []
        for n in range(150):
            text = f"Answer {n}." + (" The quokka lives on Rottnest Island." if n == 20 else "")
            messages += [user(f"Question {n}"), assistant(text)]
        store.append_messages(conversation.id, messages)
        store.create_conversation(title="Other")
    ui = make_ui(start_foldline(None, data_dir=data_dir))
    ui.open()
    page = ui.page
    page.locator("#search").fill("quokka")
    items = page.locator(".conversation-item")
    expect(items).to_have_count(1)
    snippet = items.first.locator(".item-snippet")
    expect(snippet).to_contain_text("lives on Rottnest Island")
    expect(snippet.locator("mark")).to_have_text("quokka")
    items.first.click()
    match = page.locator('.message[data-index="41"]')
    expect(match).to_be_in_viewport()
    expect(match).to_have_class(re.compile("search-hit"))
    expect(match.locator("mark")).to_have_text("quokka")
    ui.shot("search-match")
    # "Latest" still leads to the newest message.
    page.locator("#jump-latest").click()
    expect(page.locator('.message[data-index="299"]')).to_be_in_viewport()


SMALL_MODEL_CONFIG = (
    FAKE_MODEL_CONFIG
    + """
[models."tiny-model"]
provider = "fake"
context_window = 600
max_output_tokens = 100
"""
)


def test_model_picker_and_system_prompt_per_conversation(start_foldline, make_ui, fake_provider):
    app = start_foldline(SMALL_MODEL_CONFIG.format(base_url=fake_provider.openai_url))
    ui = make_ui(app)
    conversation = app.create_conversation("Picker")
    app.send(conversation["id"], "A question long enough to fill a tiny window " * 12)
    ui.open(f"&c={conversation['id']}")
    page = ui.page
    expect(page.locator("#meter-text")).not_to_have_text("—")
    page.locator("#more-button").click()
    page.get_by_role("menuitem", name="Model and instructions").click()
    dialog = page.locator("#conversation-settings")
    select = dialog.locator("#conversation-model")
    expect(select.locator("optgroup[label='fake'] option")).to_have_count(2)
    expect(select.locator("option[value='tiny-model']")).to_have_text("tiny-model · 600 window")
    expect(select).to_have_value("fake-model")
    select.select_option("tiny-model")
    expect(dialog.locator("#conversation-model-note")).to_contain_text("fold")
    dialog.locator("#conversation-system-prompt").fill("Answer like a pirate.")
    ui.shot("conversation-settings")
    dialog.locator("#conversation-settings-save").click()
    expect(dialog).to_have_count(0)
    expect(page.locator("#model-label")).to_have_text("tiny-model")
    stored = app.api("GET", f"/api/conversations/{conversation['id']}")
    assert stored["model"] == "tiny-model"
    assert stored["systemPrompt"] == "Answer like a pirate."
