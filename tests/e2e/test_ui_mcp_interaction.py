"""MCP in the UI beyond approval: a server's question as a form in the chat, a long call's
progress on its tool card (both with the reference server `server-everything`), and
signing in to a remote server from Settings in a browser tab (the SDK's own
authorization server, `mcp_host/mcp_oauth_server.py`)."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from playwright.sync_api import expect

from foldline.testing import call, text_step, tool_step

TESTS = Path(__file__).resolve().parents[1]
EVERYTHING = TESTS / "node" / "node_modules" / ".bin" / "mcp-server-everything"
OAUTH_SERVER = TESTS / "mcp_host" / "mcp_oauth_server.py"
sys.path.insert(0, str(TESTS))

from memory_keyring import MemoryKeyring  # noqa: E402

CONFIG = """\
[defaults]
model = "fake-model"

[providers.fake]
kind = "openai-compatible"
base_url = "{base_url}"

[models."fake-model"]
provider = "fake"
context_window = 200000
max_output_tokens = 500

[compaction]
auto_title = false

"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def oauth_url() -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(OAUTH_SERVER), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the OAuth MCP test server did not start") from None
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(timeout=10)


def test_a_question_as_a_form_and_progress_on_the_card(start_foldline, fake_provider, make_ui):
    if not EVERYTHING.exists():
        pytest.fail("server-everything is not installed: run `bash desktop/install.sh --test`")
    config = CONFIG.format(base_url=fake_provider.openai_url) + (
        f'[mcp_servers.ev]\ncommand = "{EVERYTHING}"\nargs = ["stdio"]\napproval = "always"\n'
    )
    app = start_foldline(config)
    app.script.add(
        tool_step(call("ev__trigger-elicitation-request", {})),
        text_step("Thanks for answering."),
        tool_step(call("ev__trigger-long-running-operation", {"duration": 4, "steps": 8})),
        text_step("The long operation finished."),
    )
    ui = make_ui(app)
    ui.open()
    page = ui.page
    box = page.locator("#composer-input")

    box.fill("Ask me something")
    box.press("Enter")
    form = page.locator(".elicitation-card")
    expect(form).to_be_visible(timeout=60_000)  # the server starts with the first message
    expect(form).to_contain_text("The MCP server ev asks:")
    expect(form).to_contain_text("Please provide inputs")
    # The schema's defaults are filled in; the person fills in the rest.
    expect(form.locator('[data-field="firstLine"] input')).to_have_value(
        "It was a dark and stormy night."
    )
    expect(form.locator('[data-field="integer"] input')).to_have_value("42")
    form.locator('[data-field="name"] input').fill("Ada Lovelace")
    form.locator('[data-field="check"] input').check()
    # A number out of the schema's range is refused with the field named; nothing is lost.
    ui.allow("status of 422")
    form.locator('[data-field="integer"] input').fill("500")
    form.locator('[data-action="accept"]').click()
    expect(form.locator(".elicitation-problem")).to_contain_text("Integer: must be between")
    ui.shot("mcp-elicitation-form")
    form.locator('[data-field="integer"] input').fill("7")
    form.locator('[data-action="accept"]').click()
    expect(form).to_have_count(0)
    ui.idle()
    expect(page.locator(".message.assistant").last).to_contain_text("Thanks for answering.")
    card = page.locator(".tool-card").first
    card.locator("summary").click()
    # The answer is kept with the call.
    expect(card).to_contain_text("Ada Lovelace")
    expect(card).to_contain_text("asked the person")

    box.fill("Run the long operation")
    box.press("Enter")
    progress = page.locator(".tool-card .tool-progress").last
    expect(progress).to_be_visible(timeout=30_000)
    expect(progress).to_contain_text("of 8")
    ui.shot("mcp-progress")
    ui.idle()
    expect(page.locator(".message.assistant").last).to_contain_text("finished")


def test_add_a_remote_server_sign_in_and_use_its_tool(
    start_foldline, fake_provider, make_ui, oauth_url, monkeypatch
):
    """What a person does: Add server (a URL), Connect, Sign in in the browser, use it."""
    original = keyring.get_keyring()
    keychain = MemoryKeyring()
    keyring.set_keyring(keychain)
    opened: list[str] = []
    browser_opened = threading.Event()

    def open_browser(url: str) -> bool:
        opened.append(url)
        browser_opened.set()
        return True

    monkeypatch.setattr("webbrowser.open", open_browser)
    try:
        app = start_foldline(CONFIG.format(base_url=fake_provider.openai_url))
        app.script.add(tool_step(call("remote__whoami", {})), text_step("You are signed in."))
        ui = make_ui(app)
        ui.open()
        page = ui.page
        page.locator("#settings-button").click()
        dialog = page.locator("#settings-dialog")
        dialog.locator('[data-tab="mcp"]').click()
        dialog.locator("#mcp-add > summary").click()
        form = dialog.locator("#mcp-add-form")
        form.locator("#mcp-add-transport").select_option("http")
        form.locator("#mcp-add-name").fill("remote")
        form.locator("#mcp-add-url").fill(oauth_url)
        form.locator("#mcp-add-approval").select_option("always")
        form.locator("#mcp-add-submit").click()

        row = dialog.locator('.mcp-server[data-server="remote"]')
        row.locator("[data-connect]").click()
        expect(row).to_have_attribute("data-state", "signin_required", timeout=30_000)
        expect(row).to_contain_text("Sign in required")
        sign_in = row.locator("[data-sign-in]")
        expect(sign_in).to_have_text("Sign in")
        ui.shot("mcp-sign-in-required")
        sign_in.click()
        expect(sign_in).to_have_text("Waiting for the browser…")

        # The system browser: a second tab on the page Foldline asked it to open.
        assert browser_opened.wait(30), "Foldline did not open the sign-in page"
        tab = page.context.new_page()
        tab.goto(opened[0])
        expect(tab.locator("#client")).to_contain_text("Foldline asks to use your account")
        tab.locator("#allow").click()
        expect(tab.locator("body")).to_contain_text("Signed in. You can close this tab")
        tab.close()

        expect(row).to_have_attribute("data-state", "running", timeout=30_000)
        expect(row).to_contain_text("whoami")
        expect(row.locator("[data-sign-in]")).to_have_text("Sign out")
        ui.shot("mcp-signed-in")
        record = json.loads(keychain.passwords[("foldline", "mcp-oauth:remote")])
        assert record["tokens"]["access_token"]
        assert not (app.data_dir / "secrets.json").exists()

        page.keyboard.press("Escape")
        ui.send("Who am I there?")
        expect(page.locator(".message.assistant").last).to_contain_text("You are signed in.")
        last_request = app.fake.requests[-1].model_request
        assert last_request is not None
        assert last_request.messages[-1].tool_results[0].output == "signed in as the test person"
    finally:
        keyring.set_keyring(original)


def test_prompts_and_resources_after_a_slash(start_foldline, fake_provider, make_ui):
    if not EVERYTHING.exists():
        pytest.fail("server-everything is not installed: run `bash desktop/install.sh --test`")
    config = CONFIG.format(base_url=fake_provider.openai_url) + (
        f'[mcp_servers.ev]\ncommand = "{EVERYTHING}"\nargs = ["stdio"]\napproval = "always"\n'
    )
    app = start_foldline(config)
    ui = make_ui(app)
    ui.open()
    page = ui.page
    ui.send("Hello")  # the first message starts the server
    box = page.locator("#composer-input")
    box.fill("/")
    menu = page.locator(".prompt-menu")
    expect(menu.locator('[data-label="ev/simple-prompt"]')).to_be_visible(timeout=30_000)
    expect(menu.locator(".prompt-entry.resource").first).to_be_visible()
    ui.shot("mcp-prompt-menu")
    # Filtered by what follows the slash; a prompt with arguments asks for them first.
    box.press_sequentially("args")
    entry = menu.locator(".prompt-entry").first
    expect(entry).to_contain_text("ev/args-prompt")
    box.press("Enter")
    card = page.locator(".prompt-card")
    expect(card).to_be_visible()
    card.locator('button[type="submit"]').click()
    expect(card.locator(".elicitation-problem")).to_contain_text("required")
    card.locator("input").first.fill("Lisbon")
    card.locator('button[type="submit"]').click()
    expect(box).to_have_value(re.compile("Lisbon"))

    # A text resource goes into the message as a quoted block under its URI.
    box.fill("/")
    box.press_sequentially("Architecture")
    expect(menu.locator(".prompt-entry.resource").first).to_be_visible(timeout=30_000)
    box.press("Enter")
    expect(box).to_have_value(re.compile(r"^\[resource demo://resource/static/document/"))


FEATURES = TESTS / "mcp_host" / "mcp_feature_server.py"
BACKEND = TESTS.parent / "backend"


def test_a_binary_resource_from_the_slash_menu_is_a_file_chip(
    start_foldline, fake_provider, make_ui
):
    # The test model takes no images: the chart is refused like an attached image would
    # be, the report (a PDF, read as its text on this server) goes with the message.
    config = CONFIG.format(base_url=fake_provider.openai_url) + (
        f'[mcp_servers.files]\ncommand = "{sys.executable}"\nargs = ["{FEATURES}"]\n'
        'approval = "always"\n'
        f'env = {{ PYTHONPATH = "{BACKEND}", CANCEL_LOG = "/dev/null" }}\n'
    )
    app = start_foldline(config)
    ui = make_ui(app)
    ui.allow("422")
    ui.open()
    page = ui.page
    ui.send("Hello")  # the first message starts the server
    box = page.locator("#composer-input")
    chips = page.locator("#composer-files .file-chip")
    menu = page.locator(".prompt-menu")

    box.fill("/")
    expect(menu.locator('[data-label="files: Sales chart"]')).to_be_visible(timeout=30_000)
    ui.shot("mcp-resource-menu")
    box.press_sequentially("Sales")
    box.press("Enter")
    expect(chips).to_have_count(1)
    expect(chips.first).to_contain_text("chart.png")
    expect(chips.first.locator("img.file-thumb")).to_have_attribute(
        "src", re.compile("^data:image/png")
    )
    expect(box).to_have_value("")
    box.fill("What does it show?")
    box.press("Enter")
    notice = page.locator(".notice.error")
    expect(notice).to_contain_text("chart.png: the model fake-model does not take images")
    expect(notice).to_contain_text("vision")
    ui.shot("mcp-resource-refused")
    # Nothing is lost: the text and the chip wait to be fixed.
    expect(box).to_have_value("What does it show?")
    expect(chips).to_have_count(1)

    chips.first.locator(".file-remove").click()
    expect(chips).to_have_count(0)
    box.fill("/")
    box.press_sequentially("Quarterly")
    expect(menu.locator(".prompt-entry").first).to_contain_text("files: Quarterly report")
    box.press("Enter")
    expect(chips).to_have_count(1)
    expect(chips.first).to_contain_text("report.pdf")
    box.fill("Summarize the report.")
    ui.shot("mcp-resource-chip")
    box.press("Enter")
    ui.idle()
    user = page.locator(".message.user").last
    expect(user.locator(".file-chip.stored")).to_contain_text("report.pdf")
    expect(user.locator(".file-chip.stored")).to_contain_text("2 pages")
    ui.shot("mcp-resource-sent")
    request = json.dumps(app.fake.requests[-1].body)
    assert "[attachment report.pdf (application/pdf)]" in request
    assert "revenue rose 12%" in request

    # A tool's embedded image is stored like the person's files: a thumbnail in its card.
    app.script.add(tool_step(call("files__snapshot", {})), text_step("A red chart."))
    ui.send("Take a snapshot")
    card = page.locator("details.tool-card").last
    card.locator("summary").click()
    thumb = card.locator(".tool-files .file-preview img")
    expect(thumb).to_have_attribute("src", re.compile("^data:image/png;base64,"))
    expect(card.locator(".tool-output")).to_contain_text("resource link file:///reports/report.pdf")
    ui.shot("mcp-resource-tool-card")
