"""The cost in the browser: the meter's popover (so far, last turn, caching's saving),
the "fold being prepared" / "ready" badge, and what a fold cost on its line."""

from __future__ import annotations

import re

from fake_model_config import FAKE_MODEL_CONFIG
from playwright.sync_api import expect

LONG = "Here is a long paragraph about the design of the storage layer. " * 25

PRICED = (
    FAKE_MODEL_CONFIG
    + """\
input_price = 3.0
output_price = 15.0
cache_read_price = 0.3
cache_write_price = 3.75

[compaction]
keep_recent_tokens = 300
"""
)


def test_meter_shows_cost_badge_and_the_fold_line_its_cost(start_foldline, make_ui, fake_provider):
    app = start_foldline(PRICED.format(base_url=fake_provider.openai_url))
    ui = make_ui(app)
    ui.open()
    page = ui.page
    badge = page.locator("#meter-flag .background-fold")
    for number in range(10):
        ui.send(f"Message {number}. {LONG}")
        if badge.count() or page.locator(".fold-line").count():
            break
    # The badge shows while the summary is written, then says it is ready.
    expect(badge).to_have_count(1)
    expect(badge).to_have_attribute("data-status", "ready", timeout=15_000)
    expect(badge).to_have_text("next summary ready")
    page.locator("#meter").hover()
    popover = page.locator("#meter-popover")
    # The badge is explained in words in the meter's details, not only on hover.
    expect(popover.locator(".background-fold-note")).to_contain_text(
        "The summary for the next fold is already written"
    )
    expect(popover.locator('[data-cost="cost-total"]')).to_have_text(re.compile(r"^\$0\.\d+$"))
    expect(popover.locator('[data-cost="cost-last-turn"]')).to_have_text(re.compile(r"^\$"))
    expect(popover.locator('[data-cost="cost-saved"]')).to_have_text(re.compile(r"^\$"))
    ui.shot("meter-cost-popover")
    page.mouse.move(600, 700)

    for number in range(10, 16):
        if page.locator(".fold-line").count():
            break
        ui.send(f"Message {number}. {LONG}")
    line = page.locator(".fold-line.current")
    expect(line).to_have_count(1)
    expect(line.locator(".fold-cost")).to_have_text(re.compile(r"cost \$0\.\d+"))
    ui.shot("fold-line-cost")
    assert not ui.unexpected_problems()
