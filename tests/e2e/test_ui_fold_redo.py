"""Redo a fold in the browser: after Undo, the notice's Redo and the Compact dialog bring
the same fold back, with no new summarizer call."""

from __future__ import annotations

from playwright.sync_api import expect

LONG = "Here is a long paragraph about the design of the storage layer. " * 6


def test_an_undone_fold_comes_back_without_a_new_summary(ui):
    app = ui.app
    conversation = app.create_conversation("Folded")
    cid = conversation["id"]
    # Enough history that a fold frees room although the person's own words stay in view.
    for number in range(8):
        app.send(cid, f"Message {number}. {LONG}")
    app.api("POST", f"/api/conversations/{cid}/compact", {})
    ui.open(f"&c={cid}")
    page = ui.page
    line = page.locator(".fold-line.current")
    expect(line).to_have_count(1)
    calls = len(app.fake.requests)

    line.locator(".undo-fold").click()
    expect(page.locator(".fold-line")).to_have_count(0)
    notice = page.locator("#notices .notice", has_text="undone")
    notice.get_by_role("button", name="Redo").click()
    expect(page.locator(".fold-line.current")).to_have_count(1)
    expect(page.locator("#notices")).to_contain_text("no new model call")
    assert app.api("GET", f"/api/conversations/{cid}/compactions")["currentVersion"] == 1

    # From the Compact dialog too, once the notice is gone.
    page.locator(".fold-line.current .undo-fold").click()
    expect(page.locator(".fold-line")).to_have_count(0)
    page.locator("#compact-button").click()
    offer = page.locator("#compact-dialog .redo-offer")
    expect(offer).to_contain_text("Fold v1 was undone")
    ui.shot("fold-redo-offer")
    offer.locator("#redo-fold").click()
    expect(page.locator("#compact-dialog")).to_have_count(0)
    expect(page.locator(".fold-line.current")).to_have_count(1)
    assert len(app.fake.requests) == calls  # the summary was never asked for again
