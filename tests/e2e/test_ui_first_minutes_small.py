"""Small things a new user met in the first minutes, in one page: Compact's gentle
default, the warning that says when the fold comes, the key points explained on the fold
line, and a text file named like an image shown as a file, not a broken thumbnail."""

from __future__ import annotations

import json

from playwright.sync_api import Route, expect

from foldline.providers.catalog import SUGGESTED_MODELS
from foldline.testing import sample_files

PREVIEW = {"fromIndex": 0, "toIndex": 2, "messages": 2, "tokens": 900}


def test_first_minutes_small_things(ui):
    app = ui.app
    conversation = app.create_conversation("Small things")
    app.send(conversation["id"], "A first question.")
    page = ui.page
    # The preview answers "something folds" for every choice, so the default is visible.
    asked: list[str] = []

    def preview(route: Route) -> None:
        asked.append(route.request.url)
        route.fulfill(status=200, content_type="application/json", body=json.dumps(PREVIEW))

    page.route("**/compactions/preview*", preview)
    ui.open(f"&c={conversation['id']}")

    # 1. Compact opens on the gentle choice (what an automatic fold keeps), not on
    # "only the last exchange".
    page.locator("#compact-button").click()
    dialog = page.locator("#compact-dialog")
    expect(dialog.locator(".preview-box")).to_be_visible()
    expect(dialog.locator("#compact-keep")).to_have_value("8000")
    assert "keepRecentTokens=8000" in asked[0]
    dialog.get_by_role("button", name="Cancel").click()
    page.unroute("**/compactions/preview*")

    checks = page.evaluate(
        """async () => {
          const { foldWarningText } = await import('./js/meter.js');
          const { detailsLine } = await import('./js/fold.js');
          const { contentMediaType } = await import('./js/attachments.js');
          const { suggestedModel } = await import('./js/settings-panels.js');
          const { SUGGESTED_MODELS } = await import('./js/onboarding.js');
          const fresh = { defaults: {}, providers: { anthropic: { kind: 'anthropic' } } };
          const dataUrl = (bytes) => 'data:x;base64,' + btoa(String.fromCharCode(...bytes));
          const text = [...new TextEncoder().encode('just some notes\\n')];
          const png = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13];
          return {
            // 79.7% reads "80%": the words say the fold comes with the next message.
            warning: foldWarningText({ fraction: 0.797, soft: 0.8, level: 'warn' }, true),
            early: foldWarningText({ fraction: 0.72, soft: 0.8, level: 'warn' }, true),
            details: detailsLine({ detailsTotal: 4, detailsKept: 1, detailsAppended: 3 }),
            textNamedPng: contentMediaType('image/png', dataUrl(text)),
            realPng: contentMediaType('image/png', dataUrl(png)),
            // Onboarding, the General placeholder and Test connection: one name.
            names: [
              SUGGESTED_MODELS.anthropic,
              suggestedModel(fresh, { providers: [] }),
              suggestedModel(fresh, { providers: [] }, 'anthropic'),
            ],
          };
        }"""
    )
    assert checks["warning"] == (
        "Context 80% full: it folds when a message takes it past 80%, likely your next."
    )
    assert "likely your next" not in checks["early"]
    assert (
        checks["details"] == "The summary kept 1 of 4 of your key points; 3 more in your own words"
    )
    assert (checks["textNamedPng"], checks["realPng"]) == ("text/plain", "image/png")
    assert checks["names"] == [SUGGESTED_MODELS["anthropic"]] * 3

    # 5. A text file named .png: a file chip, never a broken thumbnail; it sends as text.
    page.locator("#composer .file-input").set_input_files(
        [
            {"name": "notes.png", "mimeType": "image/png", "buffer": b"just some notes\n"},
            {"name": "chart.png", "mimeType": "image/png", "buffer": sample_files.png(8, 8)},
        ]
    )
    chips = page.locator("#composer .file-tray li")
    expect(chips).to_have_count(2)
    expect(chips.nth(0).locator(".file-icon")).to_have_count(1)
    expect(chips.nth(0).locator("img")).to_have_count(0)
    expect(chips.nth(1).locator("img.file-thumb")).to_have_count(1)
