"""Versions in the browser: edit the person's message, regenerate an answer, switch
between the branches with the `‹ k / n ›` switcher (mouse and keyboard), and the fold
lines, meter and model requests of each branch."""

from __future__ import annotations

import re

from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from foldline.testing import Reply

# About 330 tokens: with the 3500-token budget of the test model the fourth long turn
# folds (see test_ui_fold.py).
LONG = "Here is a long paragraph about the design of the storage layer. " * 25


def only_conversation(app) -> str:
    items = app.api("GET", "/api/conversations")["items"]
    assert len(items) == 1
    return items[0]["id"]


def shown_texts(page) -> list[str]:
    """The text of every message on screen, in order (bubbles and answers)."""
    return page.locator(".message .bubble, .message .content").evaluate_all(
        "nodes => nodes.map(n => n.textContent.trim())"
    )


def message(page, index: int):
    return page.locator(f'.message[data-index="{index}"]')


def switcher(page, index: int):
    return message(page, index).locator(".version-switcher")


def chat_requests(app) -> list[list[str]]:
    """The text of each message of each chat request the model received (summaries aside)."""
    summaries = {id(call) for call in app.script.summary_calls}
    return [
        [m.text for m in call.messages] for call in app.script.calls if id(call) not in summaries
    ]


def meter_matches_context(ui, conversation_id: str) -> dict:
    context = ui.app.api("GET", f"/api/conversations/{conversation_id}/context")
    expect(ui.page.locator("#meter")).to_have_attribute("aria-valuenow", str(context["tokens"]))
    return context


def shots(ui, name: str) -> None:
    """Screenshots of the page as it is, in the light and the dark theme (no notices)."""
    # One at a time, the first each time: a notice may also leave by itself meanwhile.
    notices = ui.page.locator(".notice")
    for _ in range(20):
        if not notices.count():
            break
        try:
            notices.first.get_by_role("button", name="Dismiss").click(timeout=2000)
        except PlaywrightTimeout:
            continue
    ui.shot(f"{name}-light")
    ui.page.emulate_media(color_scheme="dark")
    ui.shot(f"{name}-dark")
    ui.page.emulate_media(color_scheme="light")


def edit(page, index: int, text: str) -> None:
    target = message(page, index)
    target.hover()
    target.locator(".edit-button").click()
    box = target.locator("textarea.edit-input")
    expect(box).to_be_focused()
    box.fill(text)
    box.press("Enter")


def test_edit_regenerate_and_switch_between_branches(ui):
    ui.open()
    page = ui.page
    ui.send("Apples are red")
    ui.send("Pears are green")
    ui.send("Plums are purple")
    conversation_id = only_conversation(ui.app)
    expect(page.locator(".message")).to_have_count(6)
    expect(page.locator(".version-switcher")).to_have_count(0)

    # Esc leaves the editor with nothing changed.
    target = message(page, 2)
    target.hover()
    target.locator(".edit-button").click()
    box = target.locator("textarea.edit-input")
    expect(box).to_have_value("Pears are green")
    ui.shot("branches-editor")
    box.press("Escape")
    expect(target.locator(".message-editor")).to_have_count(0)
    expect(target.locator(".bubble")).to_have_text("Pears are green")
    expect(target.locator(".edit-button")).to_be_focused()

    # Edit the second question: the history from it on is the new branch.
    calls_before = len(ui.app.script.calls)
    edit(page, 2, "Pears are yellow")
    ui.idle()
    expect(page.locator(".message")).to_have_count(4)
    assert shown_texts(page) == [
        "Apples are red",
        "echo: Apples are red",
        "Pears are yellow",
        "echo: Pears are yellow",
    ]
    expect(switcher(page, 2).locator(".version-position")).to_have_text("2 / 2")
    expect(switcher(page, 3)).to_have_count(0)
    # The model was asked on the new branch only.
    assert chat_requests(ui.app)[calls_before:] == [
        ["Apples are red", "echo: Apples are red", "Pears are yellow"]
    ]
    meter_matches_context(ui, conversation_id)
    ui.shot("branches-edited")

    # Regenerate the answer: a second version of it, same question.
    ui.app.script.add(Reply(text="Yellow pears are ripe."))
    answer = message(page, 3)
    answer.hover()
    answer.locator(".regenerate-button").click()
    ui.idle()
    expect(message(page, 3).locator(".content")).to_have_text("Yellow pears are ripe.")
    expect(switcher(page, 3).locator(".version-position")).to_have_text("2 / 2")
    expect(page.locator(".message")).to_have_count(4)
    assert chat_requests(ui.app)[-1] == [
        "Apples are red",
        "echo: Apples are red",
        "Pears are yellow",
    ]
    shots(ui, "branches-regenerated")

    # Back to the first answer, then to the first version of the question: the whole
    # original branch is back, the plums included.
    switcher(page, 3).get_by_role("button", name="Previous version").click()
    expect(message(page, 3).locator(".content")).to_have_text("echo: Pears are yellow")
    expect(switcher(page, 3).locator(".version-position")).to_have_text("1 / 2")
    expect(switcher(page, 3).get_by_role("button", name="Previous version")).to_be_disabled()
    # The pressed arrow is disabled at the first version: the focus moves to the other.
    expect(switcher(page, 3).get_by_role("button", name="Next version")).to_be_focused()

    switcher(page, 2).get_by_role("button", name="Previous version").click()
    expect(page.locator(".message")).to_have_count(6)
    assert shown_texts(page) == [
        "Apples are red",
        "echo: Apples are red",
        "Pears are green",
        "echo: Pears are green",
        "Plums are purple",
        "echo: Plums are purple",
    ]
    expect(switcher(page, 2).locator(".version-position")).to_have_text("1 / 2")
    expect(page.locator(".conversation-item .item-meta")).to_contain_text("6 messages")
    assert ui.app.api("GET", f"/api/conversations/{conversation_id}")["activeLeafId"] == (
        message(page, 5).get_attribute("data-id")
    )
    meter_matches_context(ui, conversation_id)
    ui.shot("branches-original")

    # From the keyboard: Tab reaches the arrows, and Alt+Right on the message goes to the
    # next version, back where the person left that branch (the first answer, not the
    # newer regenerated one).
    next_button = switcher(page, 2).get_by_role("button", name="Next version")
    next_button.focus()
    page.keyboard.press("Alt+ArrowRight")
    expect(switcher(page, 2).locator(".version-position")).to_have_text("2 / 2")
    expect(page.locator(".message")).to_have_count(4)
    expect(message(page, 3).locator(".content")).to_have_text("echo: Pears are yellow")
    expect(switcher(page, 3).locator(".version-position")).to_have_text("1 / 2")
    expect(switcher(page, 2).get_by_role("button", name="Previous version")).to_be_focused()
    page.keyboard.press("Enter")
    expect(switcher(page, 2).locator(".version-position")).to_have_text("1 / 2")
    expect(switcher(page, 2).get_by_role("button", name="Next version")).to_be_focused()
    page.keyboard.press("Alt+ArrowRight")
    expect(switcher(page, 2).locator(".version-position")).to_have_text("2 / 2")

    # A message sent now continues the branch on screen.
    ui.send("Quinces are hard")
    assert chat_requests(ui.app)[-1] == [
        "Apples are red",
        "echo: Apples are red",
        "Pears are yellow",
        "echo: Pears are yellow",
        "Quinces are hard",
    ]
    expect(page.locator(".message")).to_have_count(6)
    meter_matches_context(ui, conversation_id)

    # A reload shows the same branch.
    page.reload()
    expect(page.locator(".message")).to_have_count(6)
    expect(message(page, 2).locator(".bubble")).to_have_text("Pears are yellow")
    expect(switcher(page, 2).locator(".version-position")).to_have_text("2 / 2")


def fill_until_folded(ui) -> None:
    # Summaries known to be quick (as the fake's are): the fold is prepared from
    # `prepare_threshold`, as for a person who pauses, rather than early for the pace
    # of these instant turns, so it folds the first messages in one go.
    ui.app.server.server.config.app.state.chat_service.background.summary_seconds = 0.0
    for number in range(12):
        if ui.page.locator(".fold-line").count():
            return
        ui.send(f"Message {number}. {LONG}")
    assert ui.page.locator(".fold-line").count(), "no automatic fold happened"


def current_fold(app, conversation_id: str) -> dict | None:
    return app.api("GET", f"/api/conversations/{conversation_id}")["compaction"]


def format_tokens(value: int) -> str:
    """What the UI shows for a token count (format.js formatTokens)."""
    if abs(value) < 1000:
        return str(value)
    k = value / 1000
    text = str(round(k)) if k >= 100 else f"{k:.1f}".removesuffix(".0")
    return f"{text}k"


def test_edits_before_and_after_the_fold(ui):
    ui.open()
    page = ui.page
    fill_until_folded(ui)
    conversation_id = only_conversation(ui.app)
    fold = current_fold(ui.app, conversation_id)
    assert fold is not None
    start = fold["apiStartIndex"]
    last_user = page.locator(".message.user").last
    last_index = int(last_user.get_attribute("data-index"))
    assert last_index >= start

    # An edit after the boundary keeps the fold: same line, same version.
    edit(page, last_index, "A short question after the fold.")
    ui.idle()
    expect(page.locator(".fold-line.current")).to_have_attribute(
        "data-version", str(fold["version"])
    )
    assert current_fold(ui.app, conversation_id)["version"] == fold["version"]
    request = ui.app.script.calls[-1]
    assert request.messages[-1].text == "A short question after the fold."
    assert "Message 0." not in request.messages[-1].text
    meter_matches_context(ui, conversation_id)

    # An edit of a folded message warns first, with the size of what the model will see:
    # the messages before it, verbatim again.
    first = message(page, 2)
    assert start > 2
    expect(first).to_have_class(re.compile("folded"))
    # The server's answer to the preview is held back, and Enter pressed before it: the
    # edit waits for the warning, and is sent only by a press after it was shown.
    held = []
    page.route("**/edit-preview", lambda route: held.append(route))
    first.hover()
    first.locator(".edit-button").click()
    box = first.locator("textarea.edit-input")
    box.fill("Message 1, shorter this time.")
    box.press("Enter")
    expect(box).to_have_attribute("readonly", "")
    assert len(held) == 1
    calls_before = len(ui.app.script.calls)
    held[0].continue_()
    warning = first.locator(".edit-warning")
    expect(warning).to_be_visible()
    expect(box).not_to_have_attribute("readonly", "")
    expect(box).to_have_value("Message 1, shorter this time.")
    assert len(ui.app.script.calls) == calls_before
    expect(page.locator(".message")).to_have_count(int(last_user.get_attribute("data-index")) + 2)
    page.unroute("**/edit-preview")
    preview = ui.app.api(
        "GET",
        f"/api/conversations/{conversation_id}/messages/{first.get_attribute('data-id')}"
        "/edit-preview",
    )
    assert preview["folded"] is True
    expect(warning).to_contain_text(
        f"The model will see the earlier context again ({format_tokens(preview['viewTokens'])}"
        " tokens"
    )
    shots(ui, "branches-fold-warning")
    box.press("Enter")
    ui.idle()

    # The new branch has no fold: no line, nothing dimmed, the model sees it all.
    expect(page.locator(".message")).to_have_count(4)
    expect(page.locator(".fold-line")).to_have_count(0)
    expect(page.locator(".message.folded")).to_have_count(0)
    assert current_fold(ui.app, conversation_id) is None
    request = ui.app.script.calls[-1]
    texts = [m.text for m in request.messages]
    assert texts[0].startswith("Message 0. Here is a long paragraph")
    assert texts[1].startswith("echo: Message 0.")
    assert texts[2:] == ["Message 1, shorter this time."]
    meter_matches_context(ui, conversation_id)
    ui.shot("branches-unfolded")

    # Back to the original: its fold, its line and its meter are back.
    switcher(page, 2).get_by_role("button", name="Previous version").click()
    expect(page.locator(".fold-line.current")).to_have_attribute(
        "data-version", str(fold["version"])
    )
    expect(page.locator(".message.folded").first).to_be_visible()
    assert current_fold(ui.app, conversation_id)["version"] == fold["version"]
    meter_matches_context(ui, conversation_id)


def test_phone_width_switcher_and_editor(ui):
    page = ui.page
    page.set_viewport_size({"width": 390, "height": 844})
    ui.open()
    ui.send("Apples are red")
    ui.send("Pears are green")
    edit(page, 2, "Pears are yellow")
    ui.idle()
    expect(switcher(page, 2).locator(".version-position")).to_have_text("2 / 2")
    ui.shot("branches-phone")
    target = message(page, 0)
    target.locator(".edit-button").click()
    expect(target.locator("textarea.edit-input")).to_be_focused()
    shots(ui, "branches-phone-editor")


def test_a_search_match_in_another_version_opens_that_version(ui):
    ui.open()
    page = ui.page
    ui.send("Apples are red")
    ui.send("Pears are green")
    edit(page, 2, "Pears are yellow")
    ui.idle()

    page.locator("#search").fill("green")
    item = page.locator(".conversation-item")
    expect(item).to_have_count(1)
    expect(item.locator(".item-snippet .other-version")).to_have_text("other version")
    item.click()
    # The version with the match is the one shown, the newest match marked.
    expect(message(page, 2).locator(".bubble")).to_have_text("Pears are green")
    expect(switcher(page, 2).locator(".version-position")).to_have_text("1 / 2")
    expect(message(page, 3).locator(".content")).to_have_text("echo: Pears are green")
    expect(message(page, 3)).to_have_class(re.compile("search-hit"))
    expect(message(page, 3).locator("mark")).to_have_text("green")
