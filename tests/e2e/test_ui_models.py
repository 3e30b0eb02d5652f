"""Today's models in the browser: the providers' lists in Settings, a working budget set
there, the meter on a 1M-token window, and a conversation whose model was retired."""

from __future__ import annotations

import socket
import tomllib
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from foldline.providers.catalog import SUGGESTED_MODELS
from foldline.testing import SAMPLE_CLAUDE_MODELS, FakeProviderServer

KEY = "sk-ant-e2e-models"
SUGGESTED = SUGGESTED_MODELS["anthropic"]
LISTED = list(SAMPLE_CLAUDE_MODELS)


@pytest.fixture
def anthropic_fake() -> Iterator[FakeProviderServer]:
    with FakeProviderServer(listed=LISTED, api_key=KEY) as server:
        yield server


def closed_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def config(anthropic_url: str) -> str:
    return f"""
[defaults]
model = "claude-sonnet-5"

[providers.anthropic]
base_url = "{anthropic_url}"
api_key = "{KEY}"

[providers.openai]
base_url = "{closed_url()}"
api_key = "sk-offline"
"""


def test_settings_lists_the_providers_models_and_sets_a_working_budget(
    start_foldline, make_ui, anthropic_fake
):
    app = start_foldline(config(anthropic_fake.anthropic_url))
    conversation = app.create_conversation("Long project")
    ui = make_ui(app)
    ui.open()
    page = ui.page
    page.locator(f'[data-id="{conversation["id"]}"]').first.click()
    # The meter fills against the working budget and names the window.
    expect(page.locator("#meter-text")).to_contain_text("/ 200k · window 1M")

    page.locator("#settings-button").click()
    dialog = page.locator("#settings-dialog")
    dialog.locator('[data-tab="models"]').click()
    table = dialog.locator("#available-models")
    # Discovery at start may still be running: refresh makes the list current.
    table.locator("#refresh-models").click()
    # Wait for the refresh to finish: its note would otherwise replace "Saved." below.
    expect(dialog.locator("span.settings-foot-note")).to_have_text("Model lists refreshed.")
    sonnet = table.locator('tr[data-model="claude-sonnet-5"]')
    expect(sonnet).to_contain_text("1M")
    expect(sonnet).to_contain_text("128k")
    expect(sonnet).to_contain_text("200k")
    expect(table.locator('tr[data-model="claude-sonnet-4-5-20250929"]')).to_contain_text(
        "deprecated"
    )
    expect(table.locator('tr[data-model="claude-3-7-sonnet-20250219"]')).to_have_count(0)
    # OpenAI is offline: its list is the catalog, and the dialog says it may be stale.
    expect(table.locator('.stale-models[data-provider="openai"]')).to_contain_text("may be stale")

    sonnet.locator("button", has_text="Adjust").click()
    card = dialog.locator('.model-card[data-model="claude-sonnet-5"]')
    budget = card.locator('[data-field="workingBudget"]')
    expect(budget).to_have_attribute("placeholder", "200000")
    expect(card).to_contain_text("answer worse on very long inputs")
    budget.fill("400000")
    ui.shot("settings-models")
    dialog.locator("#settings-save").click()
    expect(dialog.locator(".settings-foot-note", has_text="Saved.")).to_be_visible()
    # The table above shows what was just saved, without a refresh.
    folds_at = table.locator('tr[data-model="claude-sonnet-5"] td[data-label="Folds at"]')
    expect(folds_at).to_have_text("400k")
    on_disk = tomllib.loads((app.data_dir / "config.toml").read_text(encoding="utf-8"))
    assert on_disk["models"]["claude-sonnet-5"]["working_budget"] == 400_000

    dialog.locator("button", has_text="Close").last.click()
    page.reload()
    page.locator(f'[data-id="{conversation["id"]}"]').first.click()
    expect(page.locator("#meter-text")).to_contain_text("/ 400k · window 1M")
    ui.shot("meter-working-budget")


def test_a_retired_model_offers_a_switch(start_foldline, make_ui, anthropic_fake):
    app = start_foldline(config(anthropic_fake.anthropic_url))
    conversation = app.api(
        "POST", "/api/conversations", {"title": "Old one", "model": "claude-3-7-sonnet"}
    )
    ui = make_ui(app)
    ui.open()
    page = ui.page
    page.locator(f'[data-id="{conversation["id"]}"]').first.click()
    notice = page.locator(".retired-model")
    expect(notice).to_contain_text("claude-3-7-sonnet was retired")
    ui.shot("retired-model")
    notice.locator("button", has_text=f"Switch to {SUGGESTED}").click()
    expect(notice).to_have_count(0)
    expect(page.locator("#model-label")).to_have_text(SUGGESTED)
    assert app.api("GET", f"/api/conversations/{conversation['id']}")["model"] == SUGGESTED


def test_a_fresh_install_with_only_a_key_offers_current_models(
    start_foldline, make_ui, anthropic_fake, monkeypatch
):
    # Only an API key in the environment (and where the fake provider is): no config.
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_fake.anthropic_url)
    app = start_foldline("# nothing configured yet\n")
    ui = make_ui(app)
    ui.open()
    page = ui.page
    onboarding = page.locator("#onboarding")
    choice = onboarding.locator('.choice[data-provider="anthropic"]')
    expect(choice).to_contain_text(SUGGESTED)
    expect(choice).to_contain_text("the key from ANTHROPIC_API_KEY is used")
    ui.shot("onboarding-key-found")
    choice.locator("button", has_text="Continue").click()
    # The provider's own list, with its suggestion chosen (the catalog's suggestion when
    # the provider lists it, else its first current model); one real call, then chat.
    listed = app.api("GET", "/api/models")
    suggested = next(p for p in listed["providers"] if p["name"] == "anthropic")["suggested"]
    expect(page.locator("#onboarding-model")).to_have_value(suggested)
    page.locator("#onboarding-start").click()
    expect(onboarding).to_be_hidden()
    assert app.api("GET", "/api/settings")["defaults"]["model"] == suggested

    # The provider's list (asked at start) has the real windows; retired models are gone.
    models = app.api("POST", "/api/models/refresh", {})
    offered = {m["id"]: m for m in models["models"] if m["provider"] == "anthropic"}
    assert offered["claude-sonnet-5"]["contextWindow"] == 1_000_000
    assert offered["claude-sonnet-5"]["limitSource"] == "provider"
    assert "claude-3-7-sonnet-20250219" not in offered
    conversation = app.create_conversation("First")
    context = app.api("GET", f"/api/conversations/{conversation['id']}/context?messages=false")
    assert (context["contextWindow"], context["inputBudget"]) == (1_000_000, 200_000)
