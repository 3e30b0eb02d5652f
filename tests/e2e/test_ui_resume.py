"""Reloads and second windows resume a running answer: streaming, with Stop, to the end."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from foldline.testing import Reply

WORDS = 120


def start_long_answer(ui, seen: str) -> Page:
    """Send a question whose answer streams slowly; return once `seen` is on screen."""
    ui.app.script.add(
        Reply(text="".join(f"word{i} " for i in range(WORDS)), chunk_chars=8, delay=0.06)
    )
    ui.open()
    page = ui.page
    page.locator("#composer-input").fill("Write a long answer")
    page.locator("#composer-input").press("Enter")
    expect(page.locator(".message.assistant.streaming")).to_contain_text(seen)
    return page


def test_a_reload_mid_answer_follows_it_to_the_end(ui):
    page = start_long_answer(ui, "word20 ")

    page.reload()
    expect(page.locator("#app")).not_to_have_attribute("data-state", "loading")
    # Still streaming, with Stop, and growing after the reload.
    answer = page.locator(".message.assistant")
    expect(answer).to_have_class(re.compile("streaming"))
    expect(page.locator("#stop-button")).to_be_visible()
    ui.shot("resume-after-reload")
    ui.idle()
    expect(answer).not_to_have_class(re.compile("streaming"))
    expect(answer).to_contain_text(f"word{WORDS - 1}")
    expect(answer).to_have_attribute("data-status", "complete")
    # The answer is on screen exactly once and the composer works again.
    expect(answer).to_have_count(1)
    ui.send("And now?")
    expect(page.locator(".message.assistant")).to_have_count(2)


def test_a_second_window_shows_the_answer_streaming_and_can_stop_it(ui):
    first = start_long_answer(ui, "word10 ")

    second = first.context.new_page()
    second.goto(f"{ui.app.url}/#token={ui.app.token}")
    expect(second.locator("#app")).not_to_have_attribute("data-state", "loading")
    streaming = second.locator(".message.assistant.streaming")
    expect(streaming).to_contain_text("word60 ")
    second.locator("#stop-button").click()
    expect(second.locator("#app")).to_have_attribute("data-busy", "")
    stopped = second.locator(".message.assistant")
    expect(stopped).to_have_attribute("data-status", "interrupted")
    expect(stopped).not_to_contain_text(f"word{WORDS - 1}")
    # The window that sent it ends too, with the same stored answer.
    ui.idle()
    expect(first.locator(".message.assistant")).to_have_attribute("data-status", "interrupted")
    second.close()
