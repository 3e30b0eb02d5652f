"""The chat view end to end: sending, streaming, stopping, tool cards, errors, keys."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from foldline.providers.base import ProviderError
from foldline.testing import Reply, call, error_step, tool_step


def test_send_streams_markdown_and_names_the_conversation(ui):
    ui.app.script.add(
        Reply(
            text="Hello **world**, here is `code`:\n\n```python\nprint('hi')\n```\n",
            chunk_chars=4,
            delay=0.08,
        )
    )
    ui.open()
    page = ui.page
    box = page.locator("#composer-input")
    box.fill("Explain folding please")
    box.press("Enter")

    # While the answer streams the Stop button replaces Send and the message is live.
    expect(page.locator("#stop-button")).to_be_visible()
    expect(page.locator(".message.assistant.streaming")).to_have_count(1)
    ui.idle()
    expect(page.locator("#send-button")).to_be_visible()

    user = page.locator(".message.user").first
    expect(user).to_contain_text("Explain folding please")
    answer = page.locator(".message.assistant").first
    expect(answer).not_to_have_class(re.compile("streaming"))
    expect(answer.locator("strong")).to_have_text("world")
    # Fenced code is highlighted and framed with its language and a copy button.
    expect(answer.locator(".code-frame .code-head")).to_contain_text("python")
    expect(answer.locator(".code-frame code.hljs span").first).to_be_visible()
    expect(answer.locator(".copy-button")).to_have_count(1)

    # The new conversation took its title from the first message, in the list too.
    expect(page.locator("#conversation-title")).to_have_text("Explain folding please")
    expect(page.locator(".conversation-item.active .item-title")).to_have_text(
        "Explain folding please"
    )
    stored = ui.app.api("GET", "/api/conversations")["items"]
    assert [c["title"] for c in stored] == ["Explain folding please"]
    ui.shot("chat")


def test_shift_enter_is_a_new_line_and_empty_messages_are_not_sent(ui):
    ui.open()
    page = ui.page
    box = page.locator("#composer-input")
    box.click()
    box.press("Enter")
    expect(page.locator(".message")).to_have_count(0)
    box.type("first line")
    box.press("Shift+Enter")
    box.type("second line")
    expect(box).to_have_value("first line\nsecond line")
    expect(page.locator(".message")).to_have_count(0)
    box.press("Enter")
    ui.idle()
    expect(page.locator(".message.user .bubble")).to_have_text("first line\nsecond line")


def test_escape_stops_and_keeps_the_partial_answer(ui):
    full = "".join(f"word{i} " for i in range(300))
    ui.app.script.add(Reply(text=full, chunk_chars=6, delay=0.05))
    ui.open()
    page = ui.page
    page.locator("#composer-input").fill("Write a lot")
    page.locator("#composer-input").press("Enter")
    streaming = page.locator(".message.assistant.streaming")
    expect(streaming).to_contain_text("word3 ")
    page.keyboard.press("Escape")
    ui.idle()

    answer = page.locator(".message.assistant")
    expect(answer).to_have_attribute("data-status", "interrupted")
    expect(answer.locator(".status-line")).to_contain_text("Interrupted")
    shown = answer.locator(".content").inner_text()
    assert shown.startswith("word0 word1 word2 word3")
    assert len(shown) < len(full.strip())

    conversation = ui.app.api("GET", "/api/conversations")["items"][0]
    page_ = ui.app.api("GET", f"/api/conversations/{conversation['id']}/messages")
    stored = page_["items"][-1]
    assert stored["status"] == "interrupted"
    assert stored["parts"][0]["text"].strip() == shown.strip()

    # The partial answer survives a reload, still marked.
    page.reload()
    expect(page.locator(".message.assistant")).to_have_attribute("data-status", "interrupted")

    # "Continue" finishes the same answer: one bubble, the new text after the old.
    ui.app.script.add(Reply(text=" ...and the rest."))
    page.locator(".message.assistant .retry-button").click()
    ui.idle()
    expect(page.locator(".message.user")).to_have_count(1)
    expect(page.locator(".message.assistant")).to_have_count(1)
    answer = page.locator(".message.assistant")
    expect(answer).to_have_attribute("data-status", "complete")
    expect(answer).to_contain_text("and the rest.")
    expect(answer.locator(".continued-mark")).to_have_text("continued")
    expect(answer.locator(".status-line")).to_have_count(0)
    assert answer.locator(".content").inner_text().startswith(shown.strip())
    items = ui.app.api("GET", f"/api/conversations/{conversation['id']}/messages")["items"]
    assert [(m["status"], m["continued"]) for m in items] == [
        ("complete", False),
        ("complete", True),
    ]
    assert items[1]["id"] == stored["id"]
    ui.shot("continued-answer")


def test_tool_calls_render_as_collapsible_cards_with_their_output(ui):
    ui.app.script.add(
        tool_step(call("getContextStats", {}), text="Let me check the context."),
        Reply(text="The context is nearly empty."),
    )
    ui.open()
    ui.send("How full is your context?")
    page = ui.page
    card = page.locator(".tool-card")
    expect(card).to_have_count(1)
    expect(card.locator(".tool-name")).to_have_text("getContextStats")
    # Collapsed by default; opening shows the input and the output in the same card.
    expect(card.locator(".tool-output")).to_be_hidden()
    card.locator("summary").click()
    expect(card.locator(".tool-input")).to_have_text("{}")
    expect(card.locator(".tool-output")).to_contain_text('"inputBudget"')
    expect(page.locator(".message.assistant").last).to_contain_text("The context is nearly empty.")
    ui.shot("tool-card")


def test_a_failed_answer_shows_the_error_and_retry_answers_without_repeating_it(ui):
    ui.allow(r"status of 4\d\d|Failed to load resource")
    ui.app.script.add(error_step(ProviderError("bad_request", "The model rejected the request.")))
    ui.open()
    ui.send("Please answer")
    page = ui.page
    failed = page.locator('.message.assistant[data-status="error"]')
    expect(failed).to_have_count(1)
    expect(failed.locator(".status-line")).to_contain_text("The model rejected the request.")
    # The failed answer says it inline, with Retry; no toast repeats it.
    expect(page.locator(".notice.error")).to_have_count(0)
    ui.shot("error")

    failed.locator(".retry-button").click()
    ui.idle()
    answers = page.locator(".message.assistant")
    expect(answers).to_have_count(2)
    expect(answers.last).to_contain_text("echo: Please answer")
    # Retry runs the model again on the history as it is: the question is neither sent
    # nor shown a second time.
    users = page.locator(".message.user")
    expect(users).to_have_count(1)
    expect(users).to_contain_text("Please answer")
    # Only the last message may offer Retry; the old error keeps its explanation.
    expect(page.locator(".retry-button")).to_have_count(0)
    expect(answers.first).to_have_attribute("data-status", "error")

    # What is stored says the same, and survives a reload.
    conversation_id = ui.app.api("GET", "/api/conversations")["items"][0]["id"]
    stored = ui.app.api("GET", f"/api/conversations/{conversation_id}/messages")["items"]
    assert [(m["role"], m["status"]) for m in stored] == [
        ("user", "complete"),
        ("assistant", "error"),
        ("assistant", "complete"),
    ]
    retried_call = ui.app.script.calls[-1]
    assert [m.role for m in retried_call.messages] == ["user"]
    page.reload()
    expect(page.locator(".message")).to_have_count(3)
    expect(page.locator(".message.user")).to_have_count(1)
