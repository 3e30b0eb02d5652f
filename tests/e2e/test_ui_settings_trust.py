"""Settings a person can trust: Test connection after an edit shows its result at once
and keeps the model to try; a default model nobody offers is questioned before it is
saved; closing with unsaved edits asks first; a model's prices are set in its card."""

from __future__ import annotations

import tomllib

from playwright.sync_api import expect


def open_settings(ui, tab: str):
    ui.open()
    ui.page.locator("#settings-button").click()
    dialog = ui.page.locator("#settings-dialog")
    dialog.locator(f'[data-tab="{tab}"]').click()
    return dialog


def saved(app) -> dict:
    return tomllib.loads((app.data_dir / "config.toml").read_text(encoding="utf-8"))


def test_test_connection_after_an_edit_shows_its_result_the_first_time(ui):
    dialog = open_settings(ui, "providers")
    card = dialog.locator('.provider-card[data-provider="fake"]')
    base = card.locator('[data-field="baseUrl"]')
    base.fill(base.input_value() + "/")
    card.locator('[data-field="testModel"]').fill("fake-model")
    key_help = card.locator('label:has([data-field="key"]) .field-help')
    expect(key_help).to_have_text("No key: most local servers need none.")
    card.locator(".test-connection").click()
    expect(card.locator(".test-result")).to_contain_text("Connected to fake-model")
    # Never "No key" beside "Connected": the line says what the test used.
    expect(key_help).to_have_text("No key needed: the server answered without one.")
    expect(card.locator('[data-field="testModel"]')).to_have_value("fake-model")
    assert saved(ui.app)["providers"]["fake"]["base_url"].endswith("/")


def test_a_default_model_nobody_offers_is_questioned(ui):
    dialog = open_settings(ui, "general")
    page = ui.page
    dialog.locator("#settings-default-model").fill("fake-modle")
    dialog.locator("#settings-save").click()
    question = page.locator("dialog.modal", has_text="fake-modle")
    expect(question).to_contain_text("not offered")
    question.get_by_role("button", name="Cancel").click()
    assert saved(ui.app)["defaults"]["model"] == "fake-model"
    expect(dialog.locator("span.settings-foot-note")).not_to_have_text("Saved.")
    # A name from the list saves without a question.
    dialog.locator("#settings-default-model").fill("fake-model")
    dialog.locator("#settings-save").click()
    expect(dialog.locator("span.settings-foot-note")).to_have_text("Nothing changed.")


def test_closing_with_unsaved_edits_asks_first(ui):
    dialog = open_settings(ui, "general")
    page = ui.page
    dialog.locator("#settings-default-model").fill("something-else")
    page.keyboard.press("Escape")
    question = page.locator("dialog.modal", has_text="Discard")
    expect(question).to_be_visible()
    question.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_visible()
    expect(dialog.locator("#settings-default-model")).to_have_value("something-else")
    dialog.get_by_role("button", name="Close").last.click()
    page.locator("dialog.modal", has_text="Discard").get_by_role("button", name="Discard").click()
    expect(dialog).to_have_count(0)
    assert saved(ui.app)["defaults"]["model"] == "fake-model"
    # Without edits it closes at once.
    page.locator("#settings-button").click()
    page.keyboard.press("Escape")
    expect(page.locator("#settings-dialog")).to_have_count(0)


def test_a_models_prices_are_set_in_its_card(ui):
    dialog = open_settings(ui, "models")
    card = dialog.locator('.model-card[data-model="fake-model"]')
    card.locator('[data-field="inputPrice"]').fill("3")
    card.locator('[data-field="outputPrice"]').fill("15")
    card.locator('[data-field="cacheReadPrice"]').fill("0.3")
    dialog.locator("#settings-save").click()
    expect(dialog.locator("span.settings-foot-note")).to_have_text("Saved.")
    model = saved(ui.app)["models"]["fake-model"]
    assert (model["input_price"], model["output_price"], model["cache_read_price"]) == (
        3,
        15,
        0.3,
    )
    assert "cache_write_price" not in model
