"""The first ten minutes: from an empty data dir to a first answer through each kind of
provider, without touching Settings → General; and the model picker with two providers
that offer the same model id.

Every provider is the shared `FakeProviderServer`: as a hosted Anthropic key (its address
in ANTHROPIC_BASE_URL, as a proxy would set it), as a custom OpenAI-compatible base URL,
and as the local server Detect finds (the conftest points "Ollama" at it).
"""

from __future__ import annotations

from playwright.sync_api import Page, expect

from foldline.core.messages import assistant, user
from foldline.store import Store

MODEL = "fake-model"


def first_answer(ui, text: str) -> None:
    page: Page = ui.page
    # Onboarding ends on a new conversation with the model it set up, in the picker.
    expect(page.locator("#onboarding")).to_be_hidden()
    expect(page.locator("#app")).to_have_attribute("data-state", "empty")
    expect(page.locator("#start-model-picker")).to_contain_text(MODEL)
    expect(page.locator("#composer-input")).to_be_focused()
    ui.send(text)
    expect(page.locator(".message.assistant").last).to_contain_text(f"echo: {text}")


def test_a_local_server_found_by_detect_is_one_click(start_foldline, make_ui):
    app = start_foldline("")
    ui = make_ui(app)
    ui.open()
    local = ui.page.locator('#onboarding .choice[data-server="ollama"]')
    expect(local.locator("select")).to_have_value(MODEL)
    local.locator("button", has_text="Use Ollama").click()
    first_answer(ui, "Hello local")
    assert [r.wire for r in app.fake.requests][-1] == "openai"


def test_a_conversation_imported_before_any_provider_opens_without_an_error(
    start_foldline, make_ui, tmp_path
):
    # The person imports first and connects a model later: opening the imported
    # conversation shows it behind the Welcome page, with no "could not count" alarm.
    data_dir = tmp_path / "imported-first"
    data_dir.mkdir()
    with Store(data_dir / "foldline.db") as store:
        imported = store.create_conversation(title="Imported notes")
        store.append_messages(imported.id, [user("An old question"), assistant("An old answer")])
    app = start_foldline("", data_dir=data_dir)
    ui = make_ui(app)
    ui.allow("status of 409")
    page = ui.page
    with page.expect_response(lambda response: "/context" in response.url) as counted:
        ui.open(f"&c={imported.id}")
    assert counted.value.status == 409
    assert "no model is connected yet" in counted.value.text()
    expect(page.locator("#onboarding")).to_be_visible()
    expect(page.locator(".message").last).to_contain_text("An old answer")
    expect(page.locator(".notice")).to_have_count(0)


def test_a_custom_base_url_lists_its_models_and_starts_a_chat(start_foldline, make_ui):
    app = start_foldline("")
    ui = make_ui(app)
    ui.open()
    page = ui.page
    custom = page.locator('#onboarding .choice[data-provider="custom"]')
    custom.locator("#custom-provider-name").fill("proxy")
    # A dead end names the next step: an address that is not one.
    custom.locator("#custom-provider-url").fill("localhost:8000")
    custom.locator("button", has_text="Continue").click()
    expect(custom.locator(".choice-result")).to_contain_text("starting with http://")
    custom.locator("#custom-provider-url").fill(app.fake.openai_url)
    custom.locator("button", has_text="Continue").click()
    # The provider's own list, read from the server.
    expect(page.locator("#onboarding h2")).to_have_text("Choose a model from proxy")
    expect(page.locator("#onboarding-model")).to_have_value(MODEL)
    ui.shot("onboarding-choose-model")
    page.locator("#onboarding-start").click()
    first_answer(ui, "Hello proxy")
    settings = app.api("GET", "/api/settings")
    assert settings["defaults"]["model"] == MODEL
    assert settings["models"][MODEL]["provider"] == "proxy"


def test_a_hosted_key_chooses_from_the_providers_list(
    start_foldline, make_ui, monkeypatch, fake_provider
):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_provider.anthropic_url)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    app = start_foldline("")
    ui = make_ui(app)
    ui.open()
    page = ui.page
    anthropic = page.locator('#onboarding .choice[data-provider="anthropic"]')
    # No key yet: Continue says what is missing.
    anthropic.locator("button", has_text="Continue").click()
    expect(anthropic.locator(".choice-result")).to_contain_text("Paste your Anthropic API key")
    anthropic.locator("input").fill("sk-ant-test-key")
    anthropic.locator("button", has_text="Continue").click()
    expect(page.locator("#onboarding h2")).to_have_text("Choose a model from Anthropic")
    page.locator("#onboarding-model").select_option(MODEL)
    page.locator("#onboarding-start").click()
    first_answer(ui, "Hello Claude")
    assert [r.wire for r in app.fake.requests][-1] == "anthropic"
    conversation = app.api("GET", "/api/conversations")["items"][0]
    assert conversation["model"] == MODEL and conversation["provider"] == "anthropic"


def test_a_provider_added_in_settings_leads_to_choosing_its_model(start_foldline, make_ui):
    app = start_foldline("")
    ui = make_ui(app)
    ui.open()
    page = ui.page
    # Added through Settings rather than onboarding's buttons: the Welcome screen does
    # not stay; closing Settings shows the step that chooses the model.
    app.api(
        "PUT",
        "/api/settings",
        {"providers": {"lab": {"kind": "openai-compatible", "baseUrl": app.fake.openai_url}}},
    )
    page.locator("#settings-button").click()
    page.locator("#settings-dialog .modal-foot button", has_text="Close").click()
    expect(page.locator("#onboarding h2")).to_have_text("Choose a model from lab")
    page.locator("#onboarding-start").click()
    first_answer(ui, "Hello lab")


TWO_PROVIDERS = """\
[defaults]
model = "fake-model"

[providers.anthropic]
base_url = "{anthropic}"
api_key = "k"

[providers.proxy]
kind = "openai-compatible"
base_url = "{openai}"

[models."fake-model"]
provider = "proxy"
context_window = 4000
max_output_tokens = 500

[compaction]
auto_title = false
"""


def test_the_picker_offers_one_id_from_two_providers_and_keeps_the_choice(
    start_foldline, make_ui, fake_provider
):
    app = start_foldline(
        TWO_PROVIDERS.format(anthropic=fake_provider.anthropic_url, openai=fake_provider.openai_url)
    )
    app.api("POST", "/api/models/refresh", {})
    ui = make_ui(app)
    ui.open()
    page = ui.page
    # The start screen and the top bar both name the model; Ctrl+Shift+P opens the list.
    expect(page.locator("#start-model-picker")).to_contain_text(MODEL)
    expect(page.locator("#model-picker-button")).to_contain_text(MODEL)
    page.locator("#composer-input").focus()
    page.keyboard.press("Control+Shift+P")
    picker = page.locator("#model-picker")
    expect(picker).to_be_visible()
    expect(page.locator(".model-filter")).to_be_focused()
    # Two entries, one under each provider, each with its window.
    entries = picker.locator(f'.model-option[data-model="{MODEL}"]')
    expect(entries).to_have_count(2)
    expect(picker.locator(".model-group-label")).to_have_text(["Anthropic", "proxy"])
    expect(picker.locator('.model-option[data-provider="proxy"]')).to_contain_text("4k window")
    ui.shot("model-picker")
    # The configured one (proxy) is selected; the keyboard picks Anthropic's instead.
    expect(picker.locator('[data-provider="proxy"]')).to_have_attribute("aria-selected", "true")
    page.keyboard.press("Home")
    page.keyboard.press("Enter")
    expect(picker).to_have_count(0)
    expect(page.locator("#model-picker-button")).to_have_attribute("data-provider", "anthropic")
    ui.send("Which provider?")
    conversation = app.api("GET", "/api/conversations")["items"][0]
    assert conversation["provider"] == "anthropic"
    assert [r.wire for r in app.fake.requests][-1] == "anthropic"

    # In the top bar of the open conversation: back to the proxy's entry.
    page.locator("#model-picker-button").click()
    picker.locator('.model-option[data-provider="proxy"]').click()
    expect(page.locator("#model-picker-button")).to_have_attribute("data-provider", "proxy")
    ui.send("And now?")
    assert app.api("GET", f"/api/conversations/{conversation['id']}")["provider"] == "proxy"
    assert [r.wire for r in app.fake.requests][-1] == "openai"
    # A reload keeps it: the conversation remembers which provider serves it.
    page.reload()
    expect(page.locator("#model-picker-button")).to_have_attribute("data-provider", "proxy")


def test_a_server_that_does_not_answer_names_the_next_step(start_foldline, make_ui):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    app = start_foldline("")
    ui = make_ui(app)
    ui.open()
    page = ui.page
    custom = page.locator('#onboarding .choice[data-provider="custom"]')
    custom.locator("#custom-provider-url").fill(closed)
    custom.locator("button", has_text="Continue").click()
    # No list: the step says so and takes a typed name.
    expect(page.locator("#onboarding h2")).to_have_text("Choose a model from custom")
    status = page.locator("#onboarding .detect-status").first
    expect(status).to_contain_text("Type the model's name")
    page.locator("#onboarding-start").click()
    expect(page.locator("#onboarding-result")).to_contain_text("Type the model's name first")
    page.locator("#onboarding-model").fill("some-model")
    page.locator("#onboarding-start").click()
    result = page.locator("#onboarding-result")
    expect(result).to_contain_text("some-model did not answer")
    expect(result).to_contain_text("Back")
    # Back leads to the first screen, where the address can be fixed.
    page.locator("#onboarding button", has_text="Back").click()
    expect(page.locator('#onboarding .choice[data-provider="custom"]')).to_be_visible()
    assert app.api("GET", "/api/settings")["defaults"]["model"] is None


def test_an_answer_shows_its_first_token_wait_and_speed(ui):
    from foldline.testing import Reply

    ui.app.script.add(
        Reply(text="A streamed answer in several small parts.", chunk_chars=5, delay=0.05)
    )
    ui.open()
    ui.send("How fast?")
    speed = ui.page.locator(".message.assistant .speed-text")
    expect(speed).to_contain_text("first token")
    expect(speed).to_contain_text("tok/s")
    # Stored with the answer: a reload shows it too.
    ui.page.reload()
    expect(ui.page.locator(".message.assistant .speed-text")).to_contain_text("tok/s")


def test_temperature_and_max_output_per_conversation(ui):
    conversation = ui.app.create_conversation("Tuned")
    ui.app.send(conversation["id"], "hello")
    ui.open(f"&c={conversation['id']}")
    page = ui.page
    page.locator("#more-button").click()
    page.locator('[data-action="conversation-settings"]').click()
    dialog = page.locator("#conversation-settings")
    dialog.locator("#conversation-temperature").fill("0.3")
    dialog.locator("#conversation-max-output").fill("120")
    dialog.locator("#conversation-settings-save").click()
    expect(dialog).to_have_count(0)
    ui.send("Tuned now?")
    body = ui.app.fake.requests[-1].body
    assert body["temperature"] == 0.3
    assert (body.get("max_completion_tokens") or body.get("max_tokens")) == 120
    stored = ui.app.api("GET", f"/api/conversations/{conversation['id']}")["settings"]
    assert stored["generation"] == {"temperature": 0.3, "maxOutputTokens": 120}
