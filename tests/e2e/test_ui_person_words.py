"""The person's own words in the browser: after a fold whose summary keeps nothing, the
fold line counts the details the person's words still hold and the model view shows
them, the override marked as the one that holds."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from foldline.core.prompts import STRUCTURED_HEADINGS
from foldline.testing import Reply

SAID = (
    "lol ok. Let's store the sessions in Redis.",
    "ugh, mondays. btw Priya Raman is our release manager now.",
    "haha. Actually, forget Redis for the sessions; new plan: sessions go in Postgres.",
    "the staging box is 10.4.2.17 btw, anyway.",
)


def keeps_nothing(request: object) -> str:
    return "\n\n".join(f"## {heading}\nNone." for heading in STRUCTURED_HEADINGS)


def test_a_fold_that_keeps_nothing_still_shows_the_persons_words(ui):
    ui.app.script.summaries = keeps_nothing
    conversation_id = ui.app.create_conversation()["id"]
    # Long answers, so that folding them frees room beside the person's words it keeps.
    answer = "Noted. " + "The storage layer keeps every note. " * 60
    ui.app.script.add(*(Reply(text=answer) for _ in range(len(SAID) + 1)))
    for text in SAID:
        ui.app.send(conversation_id, text)
    ui.app.send(conversation_id, "And one more question about the cache.")
    ui.app.api("POST", f"/api/conversations/{conversation_id}/compact", {})
    fold = ui.app.api("GET", f"/api/conversations/{conversation_id}/compactions")["items"][-1]
    # The summary quotes only the last folded request (a fold always does); the person's
    # words hold the rest.
    kept, added = fold["detailsKept"], fold["detailsAppended"]
    assert (kept, added, fold["detailsTotal"]) == (1, 3, 4)
    # What the fold cost and what it saves, on its line.
    cost = fold["foldCost"]
    assert cost["summaryInputTokens"] > 0 and cost["rewrittenTokens"] == fold["tokensAfter"]
    assert cost["savedPerTurn"] == fold["tokensBefore"] - fold["tokensAfter"]

    ui.open(f"&conversation={conversation_id}")
    page = ui.page
    if not page.locator(".fold-line").count():
        page.locator(".conversation-item").first.click()
    details = page.locator(".fold-line.current .fold-details")
    expect(details).to_have_text(
        "The summary kept 1 of 4 of your key points; 3 more in your own words"
    )
    expect(page.locator(".fold-line.current .fold-cost-line")).to_contain_text(
        re.compile(
            r"^Cost: the summary billed \S+ tokens of input and \S+ were cached again · Saves \S+ "
            r"tokens a request over the next ~\d+ turns?$"
        )
    )

    page.locator("#model-view-button").click()
    summary = page.locator("#model-view .mv-item.summary")
    expect(summary).to_contain_text("new plan: sessions go in Postgres")
    expect(summary).to_contain_text("changes an earlier decision; this one holds")
    expect(summary).to_contain_text("Priya Raman is our release manager")
    expect(summary).to_contain_text(re.compile(r"\[#0\]\s*lol ok\. Let's store the sessions"))
    # The summary's box scrolls: show its end, where the person's words are.
    summary.locator("pre").evaluate("element => { element.scrollTop = element.scrollHeight; }")
    ui.shot("person-words-model-view")
    assert not ui.unexpected_problems()
