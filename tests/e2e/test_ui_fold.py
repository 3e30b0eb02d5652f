"""The fold in the browser: the automatic fold line, its numbers, the summary, undo,
the manual Compact dialog, the meter, the model's view, and a reload."""

from __future__ import annotations

import re
import time

from playwright.sync_api import expect

from foldline.testing import request_text

# About 130 tokens: a user message and its echo add ~280 tokens to the model's view, so
# with a 3500-token budget about the ninth turn crosses the 80% threshold. The first fold
# then has several exchanges to fold: from it on, the recall tools and the note after the
# summary join every request (~180 tokens), and a fold of one exchange on this tiny window
# would save less than that and its summary take.
LONG = "Here is a long paragraph about the design of the storage layer. " * 10


def format_tokens(value: int) -> str:
    """What the UI shows for a token count (format.js formatTokens)."""
    if abs(value) < 1000:
        return str(value)
    k = value / 1000
    text = str(round(k)) if k >= 100 else f"{k:.1f}".removesuffix(".0")
    return f"{text}k"


def current_fold(app, conversation_id):
    body = app.api("GET", f"/api/conversations/{conversation_id}/compactions")
    current = [item for item in body["items"] if item["isCurrent"]]
    return current[0] if current else None


def only_conversation(app):
    items = app.api("GET", "/api/conversations")["items"]
    assert len(items) == 1
    return items[0]["id"]


def displayed_indices(page, selector: str) -> list[int]:
    found = page.locator(selector).evaluate_all("ms => ms.map(m => m.dataset.index)")
    return [int(i) for i in found]


def meter_tokens(page) -> int:
    return int(page.locator("#meter").get_attribute("aria-valuenow"))


def settled_context(app, conversation_id: str) -> dict:
    """The conversation's context once no summary is being prepared in the background."""
    deadline = time.monotonic() + 30
    while True:
        context = app.api("GET", f"/api/conversations/{conversation_id}/context?messages=false")
        background = context["backgroundFold"]
        if background is None or background["status"] == "ready":
            return context
        assert time.monotonic() < deadline, "the background summary never became ready"
        time.sleep(0.05)


def fill_until_folded(ui) -> str:
    """Send long messages until the automatic fold; check the warning came first."""
    page = ui.page
    ui.send(f"Message 0. {LONG}")
    conversation_id = only_conversation(ui.app)
    previous = meter_tokens(page)
    warned = False
    for number in range(1, 20):
        if page.locator(".fold-line").count():
            break
        warned = warned or page.locator(".auto-fold-warning").is_visible()
        ui.send(f"Message {number}. {LONG}")
        if not page.locator(".fold-line").count():
            # The meter follows every turn, live from the events.
            now = meter_tokens(page)
            if page.locator(".fold-line").count():
                break  # the fold's line was drawn while the meter was being read
            assert now > previous
            previous = now
    assert page.locator(".fold-line").count(), "no automatic fold happened"
    assert warned, "the warning before the automatic fold never showed"
    return conversation_id


def test_automatic_fold_draws_the_line_with_the_right_numbers(ui):
    ui.open()
    conversation_id = fill_until_folded(ui)
    page = ui.page
    fold = current_fold(ui.app, conversation_id)
    assert fold is not None
    assert fold["trigger"] == "auto"

    line = page.locator(".fold-line.current")
    expect(line).to_have_count(1)
    expect(line).to_have_attribute("data-version", str(fold["version"]))
    count = fold["summarizedRange"]["messageCount"]
    expect(line.locator(".fold-count")).to_have_text(f"{count} messages")
    expect(line.locator(".fold-tokens-before")).to_have_text(format_tokens(fold["tokensBefore"]))
    expect(line.locator(".fold-tokens-after")).to_have_text(format_tokens(fold["tokensAfter"]))
    expect(line.locator(".fold-trigger")).to_have_text("auto")
    expect(line.locator(".fold-degraded")).to_have_count(0)

    # The line sits right before the first message the model still sees, and everything
    # above it is dimmed as display-only.
    start = fold["apiStartIndex"]
    after = page.evaluate(
        "document.querySelector('.fold-line.current').nextElementSibling.dataset.index"
    )
    assert int(after) == start
    indices = displayed_indices(page, ".message")
    folded = displayed_indices(page, ".message.folded")
    assert folded == [i for i in indices if i < start]
    assert folded, "nothing above the line"

    # The meter shows what the model sees after the fold.
    context = ui.app.api("GET", f"/api/conversations/{conversation_id}/context")
    expect(page.locator("#meter")).to_have_attribute("aria-valuenow", str(context["tokens"]))
    assert context["tokens"] < fold["tokensBefore"]
    ui.shot("fold-line")


def test_show_summary_then_undo(ui):
    ui.open()
    conversation_id = fill_until_folded(ui)
    page = ui.page
    line = page.locator(".fold-line.current")
    line.locator(".show-summary").click()
    summary = line.locator(".fold-summary")
    expect(summary).to_be_visible()
    # The summary is rendered Markdown: its section headings are headings. (Folding
    # several exchanges takes the fake summarizer two calls, the second stacked on the
    # first, whose headings it quotes: the first heading is the summary's own.)
    expect(summary.locator("h2", has_text="Active Task").first).to_be_visible()
    fold = current_fold(ui.app, conversation_id)
    expect(summary).to_contain_text(fold["summaryMessage"].split("\n")[2][:40])
    ui.shot("fold-summary")

    line.locator(".undo-fold").click()
    expect(page.locator(".fold-line")).to_have_count(0)
    expect(page.locator(".message.folded")).to_have_count(0)
    assert current_fold(ui.app, conversation_id) is None
    # Nothing was deleted: the undone version is still listed.
    versions = ui.app.api("GET", f"/api/conversations/{conversation_id}/compactions")["items"]
    assert [v["version"] for v in versions] == [fold["version"]]
    context = ui.app.api("GET", f"/api/conversations/{conversation_id}/context")
    expect(page.locator("#meter")).to_have_attribute("aria-valuenow", str(context["tokens"]))


def test_manual_compact_with_instructions(ui):
    ui.open()
    # Six exchanges: folding five of them saves more than the summary and the recall
    # tools a folded conversation is offered take.
    for number in range(6):
        ui.send(f"Message number {number} about the parser. " * 12)
    conversation_id = only_conversation(ui.app)
    page = ui.page
    # The last turn may have started preparing the next fold in the background; its
    # summary refines the count's calibration when ready, and the meter follows.
    context = settled_context(ui.app, conversation_id)
    expect(page.locator("#meter")).to_have_attribute("aria-valuenow", str(context["tokens"]))
    before = meter_tokens(page)
    page.locator("#compact-button").click()
    dialog = page.locator("#compact-dialog")
    expect(dialog).to_be_visible()
    preview = ui.app.api("GET", f"/api/conversations/{conversation_id}/compactions/preview")
    assert preview["messages"] > 0
    expect(dialog.locator(".preview-messages")).to_have_text(str(preview["messages"]))
    expect(dialog.locator(".preview-tokens")).to_have_text(format_tokens(preview["tokens"]))
    dialog.locator("#compact-instructions").fill("Keep the word PINEAPPLE verbatim.")
    ui.shot("compact-dialog")
    dialog.locator("#compact-confirm").click()
    expect(dialog).to_be_hidden()

    fold = current_fold(ui.app, conversation_id)
    assert fold["trigger"] == "manual"
    assert fold["summarizedRange"]["messageCount"] == preview["messages"]
    line = page.locator(".fold-line.current")
    expect(line.locator(".fold-trigger")).to_have_text("manual")
    expect(page.locator(".notice.success")).to_contain_text("Folded")
    # The instructions reached the summarizer.
    summary_request = ui.app.script.summary_calls[-1]
    assert "PINEAPPLE" in request_text(summary_request.messages) + summary_request.system
    # The meter moved to the folded view's size, smaller than before, and the fold
    # reports as "before" the number the meter showed.
    context = ui.app.api("GET", f"/api/conversations/{conversation_id}/context")
    expect(page.locator("#meter")).to_have_attribute("aria-valuenow", str(context["tokens"]))
    assert context["tokens"] < before
    assert fold["tokensBefore"] == before


def test_the_compact_dialog_can_keep_more_and_says_why_a_fold_would_not_help(ui):
    ui.open()
    # Short exchanges: on this tiny window the view after a fold (with the recall tools a
    # folded conversation is offered) has room for only a few hundred tokens of tail, so
    # keeping more must still leave more than one exchange to keep.
    for number in range(4):
        ui.send(f"Message number {number} about the parser. " * 6)
    page = ui.page
    page.locator("#compact-button").click()
    dialog = page.locator("#compact-dialog")
    # By default the gentle choice (what an automatic fold keeps): some recent messages
    # stay verbatim; "only the last exchange" folds 6 of the 8.
    expect(dialog.locator("#compact-keep")).to_have_value("8000")
    expect(dialog.locator(".preview-messages")).to_have_text("4")
    dialog.locator("#compact-keep").select_option("0")
    expect(dialog.locator(".preview-messages")).to_have_text("6")
    ui.shot("compact-dialog-keep-more")
    dialog.locator("button", has_text="Cancel").click()

    # Tiny messages: their summary would be larger, so nothing is committed, and the
    # dialog says why.
    page.locator("#new-conversation").click()
    for word in ("one", "two", "three"):
        ui.send(word)
    page.locator("#compact-button").click()
    dialog = page.locator("#compact-dialog")
    expect(dialog.locator(".preview-messages")).to_be_visible()
    dialog.locator("#compact-confirm").click()
    failed = dialog.locator('[data-outcome="failed"]')
    expect(failed).to_contain_text("would not make the model's view smaller")
    ui.shot("compact-dialog-not-smaller")


def test_failed_manual_compact_says_so_plainly(ui):
    ui.open()
    ui.send("Just one short message.")
    page = ui.page
    page.locator("#compact-button").click()
    dialog = page.locator("#compact-dialog")
    # With one exchange there is nothing to fold: the dialog says so and offers nothing.
    expect(dialog.locator(".preview-box")).to_contain_text("Nothing can be folded now")
    expect(dialog.locator("#compact-confirm")).to_be_disabled()


def test_emergency_fold_is_marked_degraded(ui):
    ui.open()
    for number in range(4):
        ui.send(f"Message number {number} about the parser. " * 12)
    ui.app.fake.fail_next("empty_summary", times=10)
    page = ui.page
    page.locator("#compact-button").click()
    dialog = page.locator("#compact-dialog")
    expect(dialog.locator(".preview-messages")).to_be_visible()
    dialog.locator("#compact-confirm").click()
    expect(dialog.locator('[data-outcome="degraded"]')).to_contain_text("emergency")
    dialog.locator("button", has_text="Close").last.click()
    line = page.locator(".fold-line.current")
    expect(line.locator(".fold-degraded")).to_be_visible()


def test_breakdown_on_hover_matches_the_context(ui):
    ui.open()
    ui.send("Hello meter")
    conversation_id = only_conversation(ui.app)
    context = ui.app.api("GET", f"/api/conversations/{conversation_id}/context")
    page = ui.page
    page.locator("#meter").hover()
    popover = page.locator("#meter-popover")
    expect(popover).to_be_visible()
    for part in ("system", "tools", "summary", "messages"):
        expect(popover.locator(f'dd[data-part="{part}"]')).to_have_text(
            f"{context['breakdown'][part]:,}"
        )
    expect(page.locator("#meter")).to_have_attribute("data-level", "ok")
    soft = context["thresholds"]["soft"]
    expect(popover).to_contain_text(f"Folds automatically at {round(soft * 100)}%")


def test_model_view_lists_the_request_and_the_summary_after_a_fold(ui):
    ui.open()
    conversation_id = fill_until_folded(ui)
    page = ui.page
    page.locator("#model-view-button").click()
    panel = page.locator("#model-view")
    expect(panel).to_be_visible()
    context = ui.app.api("GET", f"/api/conversations/{conversation_id}/context")
    items = panel.locator('.mv-item:not([data-role="system"])')
    expect(items).to_have_count(len(context["apiMessages"]))
    expect(panel.locator(".mv-item.summary")).to_have_count(1)
    expect(panel.locator(".mv-item").nth(1)).to_have_class(re.compile("summary"))
    expect(panel.locator(".mv-item.system pre")).to_have_text(context["system"])
    ui.shot("model-view")


def test_reload_shows_the_same_state(ui):
    ui.open()
    conversation_id = fill_until_folded(ui)
    page = ui.page
    fold = current_fold(ui.app, conversation_id)
    # The page has drawn every stored message (the last answer's re-read may still be
    # under way when the turn's end is heard) before it is compared with a reload.
    stored = ui.app.api("GET", f"/api/conversations/{conversation_id}")["messageCount"]
    expect(page.locator(".message")).to_have_count(stored)
    messages_before = page.locator(".message").count()
    folded_before = page.locator(".message.folded").count()
    tokens_before = meter_tokens(page)

    page.reload()
    expect(page.locator("#app")).to_have_attribute("data-state", "open")
    expect(page.locator(".fold-line.current")).to_have_attribute(
        "data-version", str(fold["version"])
    )
    expect(page.locator(".message")).to_have_count(messages_before)
    expect(page.locator(".message.folded")).to_have_count(folded_before)
    expect(page.locator("#meter")).to_have_attribute("aria-valuenow", str(tokens_before))
    expect(page.locator(".conversation-item.active")).to_have_attribute("data-id", conversation_id)


def compact_from_dialog(page, instructions: str = "") -> None:
    page.locator("#compact-button").click()
    dialog = page.locator("#compact-dialog")
    expect(dialog.locator(".preview-messages")).to_be_visible()
    if instructions:
        dialog.locator("#compact-instructions").fill(instructions)
    dialog.locator("#compact-confirm").click()
    expect(dialog).to_be_hidden()


def test_earlier_folds_stay_visible_as_quieter_lines(ui):
    ui.open()
    # Six exchanges: the first fold must save more than its summary and the recall tools
    # it brings; the second then starts well under the automatic threshold.
    for number in range(6):
        ui.send(f"First round, message {number} about the parser. " * 12)
    page = ui.page
    compact_from_dialog(page)
    # Three exchanges: with the first summary and the recall tools in the view, a fourth
    # would cross the automatic threshold and fold before the person's Compact.
    for number in range(3):
        ui.send(f"Second round, message {number} about the lexer. " * 12)
    compact_from_dialog(page)
    conversation_id = only_conversation(ui.app)
    folds = ui.app.api("GET", f"/api/conversations/{conversation_id}/compactions")["items"]
    assert [f["version"] for f in folds] == [1, 2]

    lines = page.locator(".fold-line")
    expect(lines).to_have_count(2)
    earlier, current = lines.nth(0), lines.nth(1)
    expect(earlier).to_have_class(re.compile(r"\bearlier\b"))
    expect(earlier).to_have_attribute("data-version", "1")
    expect(earlier).to_have_attribute("data-api-start-index", str(folds[0]["apiStartIndex"]))
    expect(current).to_have_attribute("data-version", "2")
    expect(current).to_have_attribute("data-api-start-index", str(folds[1]["apiStartIndex"]))
    # Only the current fold can be undone; the earlier one still shows its summary.
    expect(earlier.locator(".undo-fold")).to_have_count(0)
    earlier.locator(".show-summary").click()
    expect(earlier.locator(".fold-summary")).to_be_visible()
    ui.shot("two-folds")

    current.locator(".undo-fold").click()
    expect(lines).to_have_count(1)
    expect(page.locator(".fold-line.current")).to_have_attribute("data-version", "1")
    start = folds[0]["apiStartIndex"]
    # The messages are redrawn after the fold line: wait for the redraw to settle.
    expect(page.locator(".message.folded")).to_have_count(start)
    assert displayed_indices(page, ".message.folded") == list(range(start))


def test_summarizing_progress_is_shown_while_the_fold_runs(ui):
    ui.open()
    # Six exchanges: a fold of five saves more than its summary and the recall tools take.
    for number in range(6):
        ui.send(f"Short message number {number} about the parser. " * 12)
    ui.app.fake.fail_next("slow", on="summary", delay=0.05)
    page = ui.page
    page.locator("#compact-button").click()
    dialog = page.locator("#compact-dialog")
    expect(dialog.locator(".preview-messages")).to_be_visible()
    dialog.locator("#compact-confirm").click()
    progress = dialog.locator('.progress-row[data-state="running"]')
    expect(progress).to_contain_text("Summarizing")
    expect(page.locator("#composer-status .progress-banner")).to_contain_text("Summarizing")
    # While it runs, Esc does not hide the dialog (the fold would go on unseen).
    page.keyboard.press("Escape")
    expect(dialog).to_be_visible()
    expect(dialog).to_be_hidden(timeout=30_000)
    expect(page.locator(".fold-line.current")).to_be_visible()
    expect(page.locator("#composer-status .progress-banner")).to_have_count(0)


def test_an_unknown_context_window_is_flagged(ui):
    conversation = ui.app.create_conversation("Mystery")
    ui.app.api("PATCH", f"/api/conversations/{conversation['id']}", {"model": "mystery-model"})
    ui.open()
    page = ui.page
    page.locator(".conversation-item").first.click()
    expect(page.locator("#model-label")).to_have_text("mystery-model")
    expect(page.locator("#meter-flag")).to_have_text("unknown window")
    page.locator("#meter").hover()
    expect(page.locator("#meter-popover")).to_contain_text("context window is unknown")


def test_a_fold_after_an_undo_draws_only_the_current_chain(ui):
    # Two stacked folds made through the API, then, in the page: undo v2 and fold again.
    # v3 stacks on v1 (its parentVersion); the undone v2 is not part of the history's
    # story any more, so its line must not come back, though it is newer than v1.
    conversation_id = ui.app.create_conversation()["id"]
    # Only the person folds here: after the undo the view is large enough that an
    # automatic fold could land first and make the chain longer than this test is about.
    ui.app.api(
        "PATCH",
        f"/api/conversations/{conversation_id}",
        {"settings": {"compaction": {"auto": False}}},
    )
    for number in range(4):
        ui.app.send(conversation_id, f"First round, message {number} about the parser. " * 12)
    ui.app.api("POST", f"/api/conversations/{conversation_id}/compact", {})
    for number in range(4):
        ui.app.send(conversation_id, f"Second round, message {number} about the lexer. " * 12)
    ui.app.api("POST", f"/api/conversations/{conversation_id}/compact", {})
    ui.open(f"&c={conversation_id}")
    page = ui.page
    lines = page.locator(".fold-line")
    expect(lines).to_have_count(2)

    page.locator('.fold-line.current[data-version="2"] .undo-fold').click()
    expect(page.locator(".fold-line.current")).to_have_attribute("data-version", "1")
    ui.send("Third round: one more message about the code generator. " * 12)
    compact_from_dialog(page)
    ui.idle()

    folds = ui.app.api("GET", f"/api/conversations/{conversation_id}/compactions")
    assert folds["currentVersion"] == 3
    assert [(f["version"], f["parentVersion"]) for f in folds["items"]] == [
        (1, 0),
        (2, 1),
        (3, 1),
    ]
    by_version = {f["version"]: f for f in folds["items"]}
    expect(page.locator(".fold-line.current")).to_have_attribute("data-version", "3")
    expect(lines).to_have_count(2)
    assert lines.evaluate_all("ls => ls.map(l => l.dataset.version)") == ["1", "3"]
    # Named by their place in the chain, so the undone v2 does not read as a lost fold.
    titles = page.locator(".fold-line .fold-title")
    assert [t.strip() for t in titles.all_inner_texts()] == ["Fold 1", "Fold 2 (version 3)"]
    expect(page.locator('.fold-line[data-version="2"]')).to_have_count(0)
    expect(page.locator('.fold-line[data-version="1"]')).to_have_attribute(
        "data-api-start-index", str(by_version[1]["apiStartIndex"])
    )
    start = by_version[3]["apiStartIndex"]
    assert displayed_indices(page, ".message.folded") == list(range(start))

    # Opened afresh, the page draws the same chain.
    page.reload()
    expect(page.locator(".fold-line.current")).to_have_attribute("data-version", "3")
    expect(lines).to_have_count(2)
    assert lines.evaluate_all("ls => ls.map(l => l.dataset.version)") == ["1", "3"]


def test_the_meter_asks_for_numbers_only_and_the_model_view_for_messages(ui):
    page = ui.page
    asked: list[str] = []
    page.on(
        "request",
        lambda request: asked.append(request.url) if "/context" in request.url else None,
    )
    ui.open()
    ui.send("Hello meter")
    conversation_id = only_conversation(ui.app)
    context = ui.app.api("GET", f"/api/conversations/{conversation_id}/context")
    expect(page.locator("#meter")).to_have_attribute("aria-valuenow", str(context["tokens"]))
    assert asked, "the meter never asked for the context"
    assert all(url.endswith("/context?messages=false") for url in asked), asked

    page.locator("#model-view-button").click()
    panel = page.locator("#model-view")
    items = panel.locator('.mv-item:not([data-role="system"])')
    expect(items).to_have_count(len(context["apiMessages"]))
    assert len(context["apiMessages"]) == 2
    assert asked[-1].endswith(f"/api/conversations/{conversation_id}/context"), asked
