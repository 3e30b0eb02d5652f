"""Find (Ctrl/Cmd+F): the server searches the whole conversation, the bar says "k of n"
and each step shows its message, loading its page; other versions on request. The
sidebar's results say how many more matches a conversation has."""

from __future__ import annotations

import re

from playwright.sync_api import expect


def test_find_walks_every_match_across_pages(ui):
    app = ui.app
    cid = app.create_conversation("Long")["id"]
    for number in range(40):
        word = "walrus" if number in (1, 20, 38) else "note"
        app.send(cid, f"{word} number {number}")
    ui.open(f"&c={cid}")
    page = ui.page
    expect(page.locator(".message").last).to_contain_text("note number 39")
    # The first match (#2, "walrus number 1") is not on the loaded page.
    expect(page.locator('.message[data-index="2"]')).to_have_count(0)
    page.keyboard.press("Control+f")
    box = page.locator("#find-input")
    expect(box).to_be_focused()
    box.fill("walrus")
    count = page.locator("#find-count")
    # Every message that says it: each question and its echoed answer, three times.
    expect(count).to_have_text("1 of 6")
    hit = page.locator('.message[data-index="2"]')
    expect(hit).to_be_in_viewport()
    expect(hit).to_have_class(re.compile(r"\bfind-hit\b"))
    expect(hit.locator("mark")).to_have_text("walrus")
    expect(box).to_be_focused()
    box.press("Enter")
    expect(count).to_have_text("2 of 6")
    expect(page.locator('.message[data-index="3"]')).to_have_class(re.compile(r"\bfind-hit\b"))
    box.press("Shift+Enter")
    box.press("Shift+Enter")
    expect(count).to_have_text("6 of 6")
    expect(page.locator('.message[data-index="77"]')).to_be_in_viewport()
    ui.shot("find-bar")
    box.fill("nothing-like-this")
    expect(count).to_have_text("No matches")
    box.press("Escape")
    expect(page.locator("#find-bar")).to_be_hidden()

    # The sidebar: the newest match, and how many more there are.
    page.locator("#search").fill("walrus")
    item = page.locator(".conversation-item", has_text="Long")
    expect(item.locator(".more-matches")).to_have_text("5 more matches")
