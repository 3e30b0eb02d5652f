"""Pins and the carried details in the browser: the pin button on a message, the pinned
bar, unpinning, and the fold line saying how many of the person's details were kept."""

from __future__ import annotations

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

LONG = "Here is a long paragraph about the design of the storage layer. " * 25


def only_conversation(app) -> str:
    items = app.api("GET", "/api/conversations")["items"]
    assert len(items) == 1
    return items[0]["id"]


def test_pin_a_message_see_it_listed_and_the_fold_details(ui):
    ui.open()
    page = ui.page
    ui.send("Remember: the deploy key lives at /srv/keys/deploy.pem and never commit it.")
    conversation_id = only_conversation(ui.app)
    first = page.locator('.message.user[data-index="0"]')
    first.hover()
    first.locator(".pin-button").click()

    bar = page.locator("#pinned-list")
    expect(bar).to_be_visible()
    expect(bar.locator(".pinned-item")).to_have_count(1)
    expect(bar.locator(".pinned-jump")).to_contain_text("#0 user: Remember: the deploy key")
    expect(first.locator(".pin-button")).to_have_attribute("aria-pressed", "true")
    pins = ui.app.api("GET", f"/api/conversations/{conversation_id}")["pins"]
    assert [p["index"] for p in pins] == [0]

    ui.send("Use port 8081 for the staging API.")
    for number in range(1, 9):
        if page.locator(".fold-line").count():
            break
        ui.send(f"Message {number}. {LONG}")
    assert page.locator(".fold-line").count(), "no automatic fold happened"
    folds = ui.app.api("GET", f"/api/conversations/{conversation_id}/compactions")["items"]
    fold = next(item for item in folds if item["isCurrent"])
    total, kept, added = fold["detailsTotal"], fold["detailsKept"], fold["detailsAppended"]
    assert total >= 1
    expected = f"The summary kept {kept} of {total} of your key points"
    if added:
        expected += f"; {added} more in your own words"
    expect(page.locator(".fold-line.current .fold-details")).to_have_text(expected)
    # The pinned message rides after the summary in what the model sees.
    context = ui.app.api("GET", f"/api/conversations/{conversation_id}/context")
    first_text = context["apiMessages"][0]["parts"][0]["text"]
    assert "Pinned by the person" in first_text and "/srv/keys/deploy.pem" in first_text
    # The fold line is redrawn when the background-fold badge or the costs refresh; a
    # redraw between finding it and scrolling detaches it, so find it again.
    for attempt in range(3):
        try:
            page.locator(".fold-line.current").scroll_into_view_if_needed()
            break
        except PlaywrightError:
            if attempt == 2:
                raise
    ui.shot("pins-and-fold-details")

    bar.locator(".pinned-unpin").click()
    expect(bar).to_be_hidden()
    assert ui.app.api("GET", f"/api/conversations/{conversation_id}")["pins"] == []
    assert not ui.unexpected_problems()
