"""The pinned bar with pins outside the loaded page: each shows its text, and a click
loads the pin's page and shows the message."""

from __future__ import annotations

import re

from playwright.sync_api import expect


def test_a_pin_far_above_the_loaded_page_shows_its_text_and_jumps_to_it(ui):
    app = ui.app
    conversation = app.create_conversation("Long one")
    cid = conversation["id"]
    app.send(cid, "The deploy key lives at /srv/keys/deploy.pem")
    for number in range(1, 32):
        app.send(cid, f"filler {number}")
    first = app.api("GET", f"/api/conversations/{cid}/messages?limit=1")["items"][0]
    app.api("POST", f"/api/conversations/{cid}/messages/{first['id']}/pin")

    ui.open(f"&c={cid}")
    page = ui.page
    expect(page.locator(".message").last).to_contain_text("filler 31")
    # Message #0 is not on the loaded page, yet the bar says what it is.
    expect(page.locator('.message[data-index="0"]')).to_have_count(0)
    jump = page.locator("#pinned-list .pinned-jump")
    expect(jump).to_have_text("#0 user: The deploy key lives at /srv/keys/deploy.pem")
    jump.click()
    target = page.locator('.message[data-index="0"]')
    expect(target).to_be_in_viewport()
    expect(target).to_have_class(re.compile(r"\bsearch-hit\b"))
    ui.shot("pin-jump-far")
