"""Hand-offs ("New conversation from here") in the browser: from a fold line and a message's
meta row, the dialog (instructions, keep the last N), the new conversation opening with
its summary line, and the links both ways ("Continued from" / "Continued in")."""

from __future__ import annotations

from playwright.sync_api import expect

from foldline.testing import request_text


def _conversations(app) -> list[dict]:
    return app.api("GET", "/api/conversations")["items"]


def test_new_conversation_from_a_fold_line_reuses_its_summary_and_links_back(ui):
    ui.open()
    # Six exchanges: a fold of five saves more than its summary and the recall tools take.
    for number in range(6):
        ui.send(f"Message number {number} about the parser. " * 12)
    page = ui.page
    page.locator("#compact-button").click()
    page.locator("#compact-confirm").click()
    expect(page.locator("#compact-dialog")).to_be_hidden()
    old_id = _conversations(ui.app)[0]["id"]
    old_title = ui.app.api("GET", f"/api/conversations/{old_id}")["title"]
    summaries = len(ui.app.script.summary_calls)

    line = page.locator(".fold-line.current")
    line.locator(".fold-handoff").click()
    dialog = page.locator("#handoff-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("fold's summary is reused")
    ui.shot("handoff-dialog")
    dialog.locator("#handoff-confirm").click()
    expect(dialog).to_be_hidden()

    # The new conversation is open: no messages, its first fold is the old summary.
    expect(page.locator("#conversation-title")).to_have_text(f"{old_title} (continued)")
    new_id = ui.app.api("GET", "/api/conversations")["items"][0]["id"]
    assert new_id != old_id
    new = ui.app.api("GET", f"/api/conversations/{new_id}")
    assert new["compaction"]["trigger"] == "handoff"
    assert len(ui.app.script.summary_calls) == summaries  # reused: no summarizer call
    origin = page.locator("#handoff-origin")
    expect(origin).to_be_visible()
    expect(origin).to_contain_text(f"Continued from {old_title}")
    handoff_line = page.locator(".fold-line.current")
    expect(handoff_line.locator(".fold-count")).to_have_text("Summary of the earlier conversation")
    expect(handoff_line.locator(".undo-fold")).to_have_count(0)

    # Talking in the new one sends the old summary first.
    ui.send("Where were we?")
    sent = request_text(ui.app.script.calls[-1].messages)
    assert "This conversation continues an earlier one" in sent
    assert "Message number 5" not in sent.split("</summary>")[-1]
    # The sidebar counts the new conversation's own messages, not the old one's.
    expect(page.locator(".conversation-item.active .item-meta")).to_contain_text("2 messages")
    ui.shot("handoff-new-conversation")

    # "Continued from" opens the old one, which says where it went; and back.
    origin.locator(".handoff-link").click()
    expect(page.locator("#conversation-title")).to_have_text(old_title)
    links = page.locator("#handoff-links")
    expect(links).to_be_visible()
    expect(links).to_contain_text(f"Continued in {old_title} (continued)")
    expect(page.locator("#handoff-origin")).to_be_hidden()
    ui.shot("handoff-old-conversation")
    links.locator(".handoff-link").click()
    expect(page.locator("#conversation-title")).to_have_text(f"{old_title} (continued)")


def test_new_conversation_from_a_message_keeps_the_last_messages_and_the_instructions(ui):
    ui.open()
    for number in range(3):
        ui.send(f"Question {number}: what does step {number} do?")
    page = ui.page
    old_id = _conversations(ui.app)[0]["id"]

    # From the answer to question 1 (#3), keeping it and its question.
    page.locator('.message[data-index="3"] .handoff-button').click()
    dialog = page.locator("#handoff-dialog")
    expect(dialog).to_contain_text("message #3")
    dialog.locator("#handoff-keep").fill("2")
    dialog.locator("#handoff-instructions").fill("Keep the word PINEAPPLE verbatim.")
    dialog.locator("#handoff-confirm").click()
    expect(dialog).to_be_hidden()

    summary_request = ui.app.script.summary_calls[-1]
    prompt = request_text(summary_request.messages) + summary_request.system
    assert "PINEAPPLE" in prompt
    assert "Question 0" in prompt and "Question 1" not in prompt

    expect(page.locator("#handoff-origin")).to_be_visible()
    kept = page.locator(".message")
    expect(kept).to_have_count(2)
    expect(kept.first).to_contain_text("Question 1: what does step 1 do?")
    new_id = _conversations(ui.app)[0]["id"]
    new = ui.app.api("GET", f"/api/conversations/{new_id}")
    assert new["origin"]["conversationId"] == old_id
    old_messages = ui.app.api("GET", f"/api/conversations/{old_id}/messages")["items"]
    assert new["origin"]["messageId"] == old_messages[3]["id"]


def test_a_bad_keep_count_is_refused_in_the_dialog_and_nothing_is_created(ui):
    ui.open()
    ui.send("Only one question.")
    page = ui.page
    page.locator('.message[data-index="1"] .handoff-button').click()
    dialog = page.locator("#handoff-dialog")
    dialog.locator("#handoff-keep").fill("2.5")
    dialog.locator("#handoff-confirm").click()
    expect(dialog.locator(".inline-error")).to_contain_text("whole number")
    assert len(_conversations(ui.app)) == 1
    dialog.locator("button", has_text="Cancel").click()
    expect(dialog).to_be_hidden()


def test_the_latest_pill_never_covers_the_continued_in_link(start_foldline, make_ui, tmp_path):
    from foldline.core.messages import assistant, user
    from foldline.store import Store

    data_dir = tmp_path / "pill"
    data_dir.mkdir()
    with Store(data_dir / "foldline.db") as store:
        old = store.create_conversation(title="Long one")
        turns = []
        for n in range(40):
            turns += [user(f"Question {n} " + "words " * 30), assistant(f"Answer {n}.")]
        store.append_messages(old.id, turns)
    app = start_foldline(None, data_dir=data_dir)
    app.api("POST", f"/api/conversations/{old.id}/handoff", {"keepLast": 2})
    ui = make_ui(app)
    ui.page.set_viewport_size({"width": 390, "height": 844})
    ui.open(f"&c={old.id}")
    page = ui.page
    links = page.locator("#handoff-links")
    expect(links).to_be_visible()
    page.locator("#chat-scroll").evaluate("(e) => e.scrollTo(0, 0)")
    pill = page.locator("#jump-latest")
    expect(pill).to_be_visible()
    link, latest = links.bounding_box(), pill.bounding_box()
    assert latest["y"] + latest["height"] <= link["y"], (latest, link)
    ui.shot("handoff-latest-pill-phone")
