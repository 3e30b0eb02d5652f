"""Switching a long conversation to a model with a smaller window, in the browser.

The conversation grows on a large-window model until its view is larger than the small
model's window. The person picks the small model in "Model and instructions": the dialog
states the count of the view for that model, the meter shows the same number once the
switch is saved, and the next message folds BEFORE it is sent, so the request the
provider receives fits its window: no 400, no overflow fold. Within one provider and
across providers (the new model's tokenizer and calibration are not the old one's).

The fake provider is strict like the real APIs: a request over a model's window is a 400
(`prompt is too long` / `context_length_exceeded`), and it bills with its own tokenizer,
about half again as many tokens as the local estimate (cl100k_base) on this prose, so a
count that forgot the calibration learned on the old model (for the new provider, more
than the cautious 1.25 a provider with no samples gets) would send a request it refuses.

Between the fold point and the hard threshold the dialog says the first answer goes as it
is (it fits) and the fold follows, written in the background: that is checked too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from foldline.core.settings import CompactionSettings
from foldline.testing import (
    FakeProviderServer,
    ModelLimits,
    RecordedRequest,
    ScriptedModel,
    structured_summary,
)

WINDOWS = {
    "claude-big": ("fake-anthropic", ModelLimits(200_000, 4_000)),
    "claude-small": ("fake-anthropic", ModelLimits(8_000, 500)),
    "local-big": ("fake-compat", ModelLimits(200_000, 4_000)),
    "local-small": ("fake-compat", ModelLimits(8_000, 500)),
}
SMALL_BUDGET = 8_000 - 500
DEFAULTS = CompactionSettings()
GROWN_TO = 8_000
"""The view's size on the large model (its meter) before the switch: over the small
model's budget, and under the hard threshold when counted without calibration."""

SENTENCES = (
    "We compared the parser's error recovery on the malformed inputs from last week.",
    "The release checklist still names the old staging host, which was retired in May.",
    "Ana prefers the smaller batch size because the nightly job must end before six.",
    "Every config key is documented twice, and the two descriptions disagree on defaults.",
    "The migration keeps the archived rows but drops the unused index on the audit table.",
    "Our budget for the pilot is fixed, so the second vendor quote needs a firm answer.",
    "When the cache expires during a pause, the next request pays for its whole prompt.",
    "The field team asked for offline maps in the next version, not in this one.",
)


def prose(turn: int, sentences: int = 9) -> str:
    picked = [SENTENCES[(turn * 3 + i) % len(SENTENCES)] for i in range(sentences)]
    return f"Note {turn}: " + " ".join(picked)


def format_tokens(value: int) -> str:
    """What the UI shows for a token count (format.js formatTokens)."""
    if abs(value) < 1000:
        return str(value)
    k = value / 1000
    text = str(round(k)) if k >= 100 else f"{k:.1f}".removesuffix(".0")
    return f"{text}k"


@pytest.fixture(scope="module")
def windows_fake() -> Iterator[FakeProviderServer]:
    script = ScriptedModel(when_empty="echo", summaries=structured_summary)
    models = {name: limits for name, (_provider, limits) in WINDOWS.items()}
    with FakeProviderServer(script, models=models) as server:
        yield server


def config(fake: FakeProviderServer, model: str) -> str:
    tables = "".join(
        f'[models."{name}"]\nprovider = "{provider}"\n'
        f"context_window = {limits.context_window}\n"
        f"max_output_tokens = {limits.max_output_tokens}\n\n"
        for name, (provider, limits) in WINDOWS.items()
    )
    return (
        f'[defaults]\nmodel = "{model}"\n\n{fake.providers_toml()}{tables}'
        # Titles are model calls of their own, which would mix with the requests checked.
        "[compaction]\nauto_title = false\n"
    )


def chat_requests(requests: list[RecordedRequest]) -> list[RecordedRequest]:
    return [r for r in requests if not r.is_summary]


def grow(app, fake: FakeProviderServer, tokens: int, *, fine: bool = False) -> tuple[str, int]:
    """A conversation grown by turns over the API until its meter reaches `tokens` (`fine`:
    in small steps near the end); returns its id and its meter's count."""
    fake.reset()
    fake.script.reset()
    conversation = app.create_conversation("A long one")["id"]
    context = f"/api/conversations/{conversation}/context?messages=false"
    turn, now = 0, 0
    while now < tokens:
        app.send(conversation, prose(turn, 2 if fine and tokens - now < 1500 else 9))
        turn += 1
        now = app.api("GET", context)["tokens"]
    assert not [r for r in fake.requests if r.status != 200], "no refusal before the switch"
    return conversation, now


def switch_in_dialog(ui, old: str, new: str, promise: str) -> int:
    """Pick `new` in "Model and instructions", check what the dialog says (its count and
    `promise`), save, and check the meter then shows the dialog's number. Returns it."""
    page = ui.page
    page.locator("#more-button").click()
    page.get_by_role("menuitem", name="Model and instructions").click()
    dialog = page.locator("#conversation-settings")
    dialog.locator("#conversation-model").select_option(new)
    note = dialog.locator("#conversation-model-note")
    expect(note).to_contain_text("budget")
    stated = re.search(r"(\d+(?:\.\d)?k?) tokens", note.inner_text())
    assert stated is not None, note.inner_text()
    expect(note).to_contain_text(f"{format_tokens(SMALL_BUDGET)}-token budget")
    expect(note).to_contain_text(promise)
    exact = note.get_attribute("data-tokens")
    ui.shot(f"switch-window-dialog-{old}-to-{new}")
    dialog.locator("#conversation-settings-save").click()
    expect(dialog).to_have_count(0)
    expect(page.locator("#model-label")).to_have_text(new)
    # The meter shows the number the dialog stated: one computation, not two.
    expect(page.locator("#meter-text")).to_have_text(
        f"≈{stated.group(1)} / {format_tokens(SMALL_BUDGET)}"
    )
    expect(page.locator("#meter")).to_have_attribute("aria-valuenow", str(exact))
    return int(str(exact))


def open_on(make_ui, app, conversation: str, tokens: int):
    ui = make_ui(app)
    ui.open(f"&c={conversation}")
    expect(ui.page.locator("#meter")).to_have_attribute("aria-valuenow", str(tokens))
    return ui


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("claude-big", "claude-small"),  # one provider
        ("claude-big", "local-small"),  # Anthropic -> an OpenAI-compatible server
        ("local-big", "claude-small"),  # an OpenAI-compatible server -> Anthropic
    ],
)
def test_a_smaller_window_folds_before_the_send_with_one_number(
    start_foldline, make_ui, windows_fake, old, new
):
    fake = windows_fake
    app = start_foldline(config(fake, old))
    conversation, grown = grow(app, fake, GROWN_TO)
    before_switch = len(fake.requests)
    ui = open_on(make_ui, app, conversation, grown)
    said = switch_in_dialog(ui, old, new, "fold into a summary before its first answer")

    ui.send("Now on the smaller model: what is still open?")
    line = ui.page.locator(".fold-line.current")
    expect(line).to_have_count(1)
    expect(line.locator(".fold-trigger")).to_have_text("auto")
    # The list redraws after a fold: scroll to whichever line is current when this runs.
    ui.page.evaluate(
        "document.querySelector('.fold-line.current').scrollIntoView({block: 'center'})"
    )
    expect(line).to_be_in_viewport()
    ui.shot(f"switch-window-folded-{old}-to-{new}")

    after = fake.requests[before_switch:]
    refused = [(r.status, r.input_tokens) for r in after if r.status != 200]
    assert not refused, f"the provider refused a request: {refused}"
    chats = chat_requests(after)
    assert len(chats) == 1, "one answer, with no retry after an overflow"
    sent = chats[0]
    assert sent.model_request is not None and sent.model_request.model == new
    assert sent.input_tokens is not None
    assert sent.input_tokens + sent.model_request.max_output_tokens <= 8_000
    # The fold's summary was written before the answer's request went out.
    assert any(r.is_summary for r in after[: after.index(sent)]), "no fold before the send"
    folds = app.api("GET", f"/api/conversations/{conversation}/compactions")["items"]
    assert [f["trigger"] for f in folds] == ["auto"]
    usage = sent.usage
    assert usage is not None
    billed = usage.input_tokens + usage.cache_read_tokens + usage.cache_creation_tokens
    assert billed == sent.input_tokens
    print(
        "SWITCH",
        json.dumps(
            {
                "from": old,
                "to": new,
                "meterBefore": grown,
                "dialog": said,
                "sentInputTokens": sent.input_tokens,
                "billedInput": billed,
                "foldTokensBefore": folds[0]["tokensBefore"],
                "foldTokensAfter": folds[0]["tokensAfter"],
            }
        ),
    )


def test_past_the_fold_point_but_under_the_hard_threshold_the_first_answer_goes_as_it_is(
    start_foldline, make_ui, windows_fake
):
    fake = windows_fake
    app = start_foldline(config(fake, "claude-big"))
    # Midway between the small model's fold point and its hard threshold.
    soft, hard = DEFAULTS.threshold, DEFAULTS.hard_threshold
    conversation, grown = grow(app, fake, round(SMALL_BUDGET * (soft + hard) / 2), fine=True)
    before_switch = len(fake.requests)
    ui = open_on(make_ui, app, conversation, grown)
    said = switch_in_dialog(ui, "claude-big", "local-small", "its first answer fits as it is")
    assert soft * SMALL_BUDGET <= said < hard * SMALL_BUDGET

    ui.send("Still fits?")
    expect(ui.page.locator(".fold-line")).to_have_count(0)
    # Sent unfolded (the background summary may start first, but nothing was folded),
    # and it fit.
    first = chat_requests(fake.requests[before_switch:])[0]
    assert first.status == 200 and first.model_request is not None
    assert first.input_tokens is not None and first.input_tokens > soft * SMALL_BUDGET
    assert first.input_tokens + first.model_request.max_output_tokens <= 8_000
    # The summary written in the background meanwhile folds at the next message.
    ui.send("And now?")
    expect(ui.page.locator(".fold-line.current .fold-trigger")).to_have_text("auto")
    assert all(r.status == 200 for r in fake.requests[before_switch:])
