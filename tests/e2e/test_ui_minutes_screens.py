"""Pictures of the first minutes and of the model picker at 390 px (a phone) and 1440 px,
light and dark, for docs/ui.md; and the phone's top bar, which holds the title, the model
and the meter for every kind of model (a reasoning model's effort select too) without
one covering another.

They land in test-artifacts/screenshots/minutes/ (copy them to docs/ui/ to update).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

OUT = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots" / "minutes"
SIZES = {"phone": {"width": 390, "height": 844}, "wide": {"width": 1440, "height": 900}}
REASONING = "claude-sonnet-4-6"

CONFIG = """\
[defaults]
model = "fake-model"

[providers.fake]
kind = "openai-compatible"
base_url = "{base_url}"

[providers.anthropic]
base_url = "{anthropic_url}"
api_key = "k"

[models."fake-model"]
provider = "fake"
context_window = 4000
max_output_tokens = 500

[models."{reasoning}"]
provider = "anthropic"

[compaction]
auto_title = false
"""


def boxes_apart(page: Page, selectors: list[str]) -> None:
    """Each element is on screen, and no two of them overlap."""
    boxes = {s: page.locator(s).bounding_box() for s in selectors}
    width = page.viewport_size["width"]
    for selector, box in boxes.items():
        assert box is not None and box["width"] > 0, selector
        assert box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, (selector, box)
    names = list(boxes)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            p, q = boxes[a], boxes[b]
            apart = (
                p["x"] + p["width"] <= q["x"] + 0.5
                or q["x"] + q["width"] <= p["x"] + 0.5
                or p["y"] + p["height"] <= q["y"] + 0.5
                or q["y"] + q["height"] <= p["y"] + 0.5
            )
            assert apart, f"{a} {p} overlaps {b} {q}"


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", ["phone", "wide"])
def test_first_minutes_pictures_and_the_phone_top_bar(
    browser: Browser, start_foldline, fake_provider, size, scheme
):
    OUT.mkdir(parents=True, exist_ok=True)
    tag = f"{size}-{scheme}"
    empty = start_foldline("")
    context = browser.new_context(viewport=SIZES[size], color_scheme=scheme)
    page = context.new_page()
    try:
        page.goto(f"{empty.url}/#token={empty.token}")
        custom = page.locator('#onboarding .choice[data-provider="custom"]')
        custom.locator("#custom-provider-url").fill(fake_provider.openai_url)
        custom.locator("button", has_text="Continue").click()
        expect(page.locator("#onboarding-model")).to_have_value("fake-model")
        page.screenshot(path=str(OUT / f"onboarding-model-{tag}.png"))
        empty.server.stop()

        app = start_foldline(
            CONFIG.format(
                base_url=fake_provider.openai_url,
                anthropic_url=fake_provider.anthropic_url,
                reasoning=REASONING,
            )
        )
        app.api("POST", "/api/models/refresh", {})
        thinking = app.api(
            "POST",
            "/api/conversations",
            {"title": "Reasoning about the storage layer", "model": REASONING},
        )
        page.goto(f"{app.url}/#token={app.token}")
        expect(page.locator("#app")).to_have_attribute("data-state", "empty")
        page.locator("#start-model-picker").click()
        expect(page.locator("#model-picker .model-option").first).to_be_visible()
        page.screenshot(path=str(OUT / f"model-picker-{tag}.png"))
        page.keyboard.press("Escape")

        page.goto(f"{app.url}/#token={app.token}&c={thinking['id']}")
        page.reload()
        expect(page.locator("#conversation-title")).to_have_text(thinking["title"])
        expect(page.locator("#effort-control")).to_be_visible()
        expect(page.locator("#meter-text")).not_to_have_text("—")
        boxes_apart(
            page,
            [
                "#conversation-title",
                "#model-picker-button",
                "#effort-select",
                "#meter",
                "#more-button",
            ],
        )
        page.screenshot(path=str(OUT / f"top-bar-reasoning-{tag}.png"))
        page.keyboard.press("Control+/")
        expect(page.locator("#shortcut-sheet")).to_be_visible()
        page.screenshot(path=str(OUT / f"shortcuts-{tag}.png"))
    finally:
        context.close()
