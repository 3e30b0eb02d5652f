"""Managing conversations and settings in the browser: search, rename, delete, export,
import, the settings round trip, onboarding, and a long history loaded in pages."""

from __future__ import annotations

import json
import re
import tomllib

from playwright.sync_api import expect

from foldline.core.messages import assistant, user
from foldline.store import Store

EMPTY_CONFIG = "# nothing configured yet\n"


def test_search_finds_conversations_by_message_text(ui):
    zebra = ui.app.create_conversation("Animals")
    ui.app.send(zebra["id"], "Tell me about the zebra crossing")
    other = ui.app.create_conversation("Plants")
    ui.app.send(other["id"], "Tell me about ferns")
    ui.open()
    page = ui.page
    items = page.locator(".conversation-item")
    expect(items).to_have_count(2)
    # Newest first.
    expect(items.first.locator(".item-title")).to_have_text("Plants")

    page.locator("#search").fill("zebra")
    expect(items).to_have_count(1)
    expect(items.first.locator(".item-title")).to_have_text("Animals")
    page.locator("#search").fill("nothingmatchesthis")
    expect(items).to_have_count(0)
    expect(page.locator(".list-empty")).to_contain_text("Nothing matches")
    page.locator("#search").press("Escape")
    expect(items).to_have_count(2)


def test_rename_and_delete_from_the_sidebar(ui):
    created = ui.app.create_conversation("Old title")
    ui.open()
    page = ui.page
    item = page.locator(".conversation-item").first
    item.hover()
    item.locator(".rename").click()
    field = item.locator(".rename-input")
    field.fill("New title")
    field.press("Enter")
    expect(page.locator(".conversation-item .item-title")).to_have_text("New title")
    assert ui.app.api("GET", f"/api/conversations/{created['id']}")["title"] == "New title"

    page.locator(".conversation-item").first.click()
    expect(page.locator("#conversation-title")).to_have_text("New title")
    item = page.locator(".conversation-item").first
    item.hover()
    item.locator(".delete").click()
    confirm = page.locator("dialog[open]")
    expect(confirm).to_contain_text("cannot be undone")
    # Cancelling keeps it.
    confirm.locator("button", has_text="Cancel").click()
    expect(page.locator(".conversation-item")).to_have_count(1)
    item.hover()
    item.locator(".delete").click()
    page.locator('dialog[open] [data-role="confirm"]').click()
    expect(page.locator(".conversation-item")).to_have_count(0)
    expect(page.locator("#app")).to_have_attribute("data-state", "empty")
    assert ui.app.api("GET", "/api/conversations")["items"] == []


def test_export_markdown_and_json_then_import(ui, tmp_path):
    ui.open()
    ui.send("Remember the number 4711")
    page = ui.page

    page.locator("#more-button").click()
    with page.expect_download() as markdown_download:
        page.locator('[data-action="export-markdown"]').click()
    markdown_path = tmp_path / "export.md"
    markdown_download.value.save_as(markdown_path)
    markdown = markdown_path.read_text(encoding="utf-8")
    assert "Remember the number 4711" in markdown
    assert "echo: Remember the number 4711" in markdown

    page.locator("#more-button").click()
    with page.expect_download() as json_download:
        page.locator('[data-action="export-json"]').click()
    json_path = tmp_path / "export.json"
    json_download.value.save_as(json_path)
    document = json.loads(json_path.read_text(encoding="utf-8"))
    assert document["format"] == "foldline.conversation"
    assert len(document["messages"]) == 2

    page.locator("#import-file").set_input_files(str(json_path))
    expect(page.locator(".conversation-item")).to_have_count(2)
    expect(page.locator(".notice.success", has_text="Imported")).to_be_visible()
    # The import opens, with the same messages.
    expect(page.locator(".message")).to_have_count(2)
    expect(page.locator(".message.assistant")).to_contain_text("echo: Remember the number 4711")
    # Titled as an import, so it is not mistaken for the original.
    expect(page.locator("#conversation-title")).to_have_text("Remember the number 4711 (imported)")
    active = page.locator(".conversation-item.active").get_attribute("data-id")
    original = [c["id"] for c in ui.app.api("GET", "/api/conversations")["items"]]
    assert active in original and len(set(original)) == 2


def test_import_of_a_bad_file_says_why(ui, tmp_path):
    ui.allow(r"status of 422")
    ui.open()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "something else"}), encoding="utf-8")
    ui.page.locator("#import-file").set_input_files(str(bad))
    expect(ui.page.locator(".notice.error")).to_contain_text("The import failed")
    expect(ui.page.locator(".conversation-item")).to_have_count(0)


def test_settings_round_trip(ui):
    ui.open()
    page = ui.page
    page.locator("#settings-button").click()
    dialog = page.locator("#settings-dialog")
    expect(dialog.locator("#settings-default-model")).to_have_value("fake-model")

    dialog.locator('[data-tab="compaction"]').click()
    dialog.locator('[data-field="threshold"]').fill("70")
    dialog.locator('[data-field="prepareThreshold"]').fill("60")
    ui.shot("settings-compaction")
    dialog.locator('[data-field="keepRecentTokens"]').fill("500")
    dialog.locator('[data-field="personWordsShare"]').fill("12")
    dialog.locator('select[data-field="strategy"]').select_option("narrative")
    dialog.locator('input[data-field="prune"]').uncheck()

    dialog.locator('[data-tab="models"]').click()
    dialog.locator("#new-model-name").fill("big-model")
    dialog.locator("#add-model").click()
    card = dialog.locator('.model-card[data-model="big-model"]')
    card.locator('[data-field="contextWindow"]').fill("128000")
    card.locator('select[data-field="provider"]').select_option("fake")
    ui.shot("settings")
    dialog.locator("#settings-save").click()
    expect(dialog.locator(".settings-foot-note", has_text="Saved.")).to_be_visible()

    saved = ui.app.api("GET", "/api/settings")
    assert saved["compaction"]["threshold"] == 0.7
    assert saved["compaction"]["prepareThreshold"] == 0.6
    assert saved["compaction"]["keepRecentTokens"] == 500
    assert saved["compaction"]["personWordsShare"] == 0.12
    assert saved["compaction"]["strategy"] == "narrative"
    assert saved["compaction"]["prune"] is False
    assert saved["models"]["big-model"]["contextWindow"] == 128000
    assert saved["models"]["big-model"]["provider"] == "fake"
    on_disk = tomllib.loads((ui.app.data_dir / "config.toml").read_text(encoding="utf-8"))
    assert on_disk["compaction"]["threshold"] == 0.7
    # Saving did not rewrite what was not touched.
    assert on_disk["models"]["fake-model"]["context_window"] == 4000

    # Reopened, the dialog shows what was saved.
    dialog.locator("button", has_text="Close").last.click()
    page.reload()
    page.locator("#settings-button").click()
    dialog = page.locator("#settings-dialog")
    dialog.locator('[data-tab="compaction"]').click()
    expect(dialog.locator('[data-field="threshold"]')).to_have_value("70")
    expect(dialog.locator('select[data-field="strategy"]')).to_have_value("narrative")
    expect(dialog.locator('input[data-field="prune"]')).not_to_be_checked()
    dialog.locator('[data-tab="models"]').click()
    expect(
        dialog.locator('.model-card[data-model="big-model"] [data-field="contextWindow"]')
    ).to_have_value("128000")

    # The connection test talks to the (fake) provider with the default model.
    dialog.locator('[data-tab="providers"]').click()
    fake = dialog.locator('.provider-card[data-provider="fake"]')
    fake.locator(".test-connection").click()
    expect(fake.locator(".test-result")).to_contain_text("Connected to fake-model")


def test_onboarding_detects_a_local_server_and_starts_chatting(start_foldline, make_ui):
    app = start_foldline(EMPTY_CONFIG)
    ui = make_ui(app)
    ui.open()
    page = ui.page
    onboarding = page.locator("#onboarding")
    expect(onboarding).to_be_visible()
    choice = onboarding.locator('.choice[data-server="ollama"]')
    expect(choice).to_contain_text("Ollama")
    expect(choice.locator("select")).to_have_value("fake-model")
    ui.shot("onboarding")
    choice.locator("button", has_text="Use Ollama").click()
    expect(onboarding).to_be_hidden()

    saved = app.api("GET", "/api/settings")
    assert saved["defaults"]["model"] == "fake-model"
    assert saved["providers"]["ollama"]["kind"] == "openai-compatible"
    assert saved["providers"]["ollama"]["baseUrl"] == f"{app.fake.url}/v1"
    ui.send("Hello local model")
    expect(page.locator(".message.assistant")).to_contain_text("echo: Hello local model")


def test_a_long_history_opens_on_its_newest_page_and_loads_older_pages(
    start_foldline, make_ui, tmp_path
):
    data_dir = tmp_path / "long"
    data_dir.mkdir()
    with Store(data_dir / "foldline.db") as store:
        conversation = store.create_conversation(title="Long history")
        messages = []
        for number in range(0, 2000, 2):
            messages += [user(f"Question {number}"), assistant(f"Answer {number + 1}")]
        store.append_messages(conversation.id, messages)
    app = start_foldline(None, data_dir=data_dir)
    ui = make_ui(app)
    ui.open()
    page = ui.page
    page.locator(".conversation-item").first.click()
    inner = page.locator("#chat-inner")
    expect(inner).to_have_attribute("data-total", "2000")
    expect(inner).to_have_attribute("data-hi", "2000")
    expect(page.locator('.message[data-index="1999"]')).to_be_in_viewport()
    first_lo = int(inner.get_attribute("data-lo"))
    assert 0 < first_lo < 2000
    assert page.locator(".message").count() == 2000 - first_lo

    scroller = page.locator("#chat-scroll")
    largest_dom = 0
    lo = first_lo
    for _ in range(60):
        scroller.evaluate("element => { element.scrollTop = 0; }")
        expect(inner).not_to_have_attribute("data-lo", str(lo))
        lo = int(inner.get_attribute("data-lo"))
        largest_dom = max(largest_dom, page.locator(".message").count())
        if lo == 0:
            break
    assert lo == 0
    expect(page.locator(".page-edge.top")).to_have_text("Beginning of the conversation")
    scroller.evaluate("element => { element.scrollTop = 0; }")
    expect(page.locator('.message[data-index="0"]')).to_be_in_viewport()
    # The DOM stayed bounded while paging through the whole history.
    assert largest_dom <= 400
    hi = int(inner.get_attribute("data-hi"))
    assert hi < 2000

    page.locator("#jump-latest").click()
    expect(inner).to_have_attribute("data-hi", "2000")
    expect(page.locator('.message[data-index="1999"]')).to_be_in_viewport()
    assert re.fullmatch(r"\d+", inner.get_attribute("data-lo"))


def test_invalid_stored_settings_open_with_a_notice_and_a_full_disk_says_so(
    start_foldline, make_ui, tmp_path
):
    """Settings saved by an older version that did not check them: the conversation opens
    and a notice says the defaults are used. A full disk is named as such."""
    data_dir = tmp_path / "old-settings"
    data_dir.mkdir()
    with Store(data_dir / "foldline.db") as store:
        conversation = store.create_conversation(
            title="Old settings", settings={"compaction": {"treshold": 0.5}}
        )
        store.append_messages(conversation.id, [user("Hello"), assistant("Hi")])
    app = start_foldline(None, data_dir=data_dir)
    ui = make_ui(app)
    ui.open()
    page = ui.page
    page.locator(".conversation-item").first.click()
    expect(page.locator(".message.assistant")).to_contain_text("Hi")
    notice = page.locator(".notice.warn", has_text="Settings set aside")
    expect(notice).to_contain_text("settings.compaction.treshold")
    ui.shot("settings-notice")

    # The server answers 507 disk_full (simulated here at the network layer; the
    # server's side is tested in tests/server/test_disk_full.py).
    page.route(
        "**/api/conversations",
        lambda route: (
            route.fulfill(
                status=507,
                content_type="application/json",
                body=json.dumps(
                    {"error": {"code": "disk_full", "message": "The disk is full: nothing saved."}}
                ),
            )
            if route.request.method == "POST"
            else route.continue_()
        ),
    )
    ui.allow("507")
    page.locator("#new-conversation").click()
    page.locator("#composer-input").fill("A new conversation")
    page.locator("#composer-input").press("Enter")
    expect(page.locator(".notice.error", has_text="The disk is full")).to_be_visible()
    ui.shot("disk-full-notice")
