"""MCP in the UI: the approval card (Allow once, Always allow this tool, Deny) in a real
turn against the test MCP server, and in Settings the servers' state, restart, Add server
and the import."""

from __future__ import annotations

import json
import re
import sys
import tomllib

from mcp_ui_setup import CONFIG, SERVER_SCRIPT, start
from playwright.sync_api import Response, expect

from foldline.testing import call, text_step, tool_step


def open_mcp_settings(ui):
    """Open the app, then Settings on its Tools (MCP) tab; the dialog's locator."""
    ui.open()
    ui.page.locator("#settings-button").click()
    dialog = ui.page.locator("#settings-dialog")
    dialog.locator('[data-tab="mcp"]').click()
    return dialog


def test_approval_card_allow_always_and_deny(start_foldline, fake_provider, make_ui):
    app = start(start_foldline, fake_provider)
    app.script.add(
        tool_step(call("tests__echo", {"text": "from the UI"})),
        text_step("Echo allowed once."),
        tool_step(call("tests__measure", {"n": 4})),
        text_step("Measure allowed for good."),
        tool_step(call("tests__measure", {"n": 5})),
        text_step("Measured again without asking."),
        tool_step(call("tests__echo", {"text": "no"})),
        text_step("The call was denied."),
    )
    ui = make_ui(app)
    ui.open()
    page = ui.page
    box = page.locator("#composer-input")

    box.fill("Echo something")
    box.press("Enter")
    card = page.locator(".approval-card")
    expect(card).to_be_visible(timeout=60_000)  # the server starts with the first message
    expect(card).to_contain_text("echo")
    expect(card).to_contain_text("tests")
    expect(card.locator(".approval-arguments")).to_contain_text('"text": "from the UI"')
    ui.shot("mcp-approval")
    card.locator('[data-decision="allow"]').click()
    ui.idle()
    expect(card).to_have_count(0)
    expect(page.locator(".message.assistant").last).to_contain_text("Echo allowed once.")

    box.fill("Measure 4")
    box.press("Enter")
    expect(card).to_contain_text("measure")
    card.locator('[data-decision="always"]').click()
    ui.idle()
    expect(page.locator(".message.assistant").last).to_contain_text("Measure allowed for good.")

    box.fill("Measure 5")
    box.press("Enter")
    ui.idle()
    expect(card).to_have_count(0)
    expect(page.locator(".message.assistant").last).to_contain_text("without asking")

    box.fill("Echo no")
    box.press("Enter")
    expect(card).to_contain_text("echo")
    card.locator('[data-decision="deny"]').click()
    ui.idle()
    expect(page.locator(".message.assistant").last).to_contain_text("The call was denied.")
    # The model was given the denial as a result it could read (the OpenAI wire has no
    # error flag on tool results; the text says it).
    last_request = app.fake.requests[-1].model_request
    assert last_request is not None
    denied = last_request.messages[-1].tool_results[0]
    assert denied.output == "The person denied this call of echo of the MCP server tests."
    assert 'approval = "always"' in (app.data_dir / "config.toml").read_text()


def test_settings_show_servers_restart_and_import(start_foldline, fake_provider, make_ui):
    app = start(start_foldline, fake_provider)
    ui = make_ui(app)
    dialog = open_mcp_settings(ui)
    server = dialog.locator('.mcp-server[data-server="tests"]')
    expect(server).to_contain_text("not started yet")
    expect(server).not_to_contain_text("ui-secret-value")
    expect(server).to_contain_text("API_TOKEN=")

    server.locator("[data-restart]").click()
    expect(server).to_have_attribute("data-state", "running", timeout=60_000)
    expect(server.locator(".mcp-tools")).to_contain_text("tests__echo")

    # Per-tool overrides: switch one tool off, let another run without asking.
    # Each change is saved by its own request, answered once config.toml is written.
    def saved(response: Response) -> bool:
        return response.url.endswith("/api/mcp/servers/tests") and response.request.method != "GET"

    with ui.page.expect_response(saved):
        server.locator('[data-tool-enabled="crash"]').uncheck()
    expect(server.locator('[data-tool-enabled="crash"]')).not_to_be_checked()
    with ui.page.expect_response(saved):
        server.locator('[data-tool-approval="echo"]').select_option("always")
    expect(server.locator('[data-tool-approval="echo"]')).to_have_value("always")
    written = tomllib.loads((app.data_dir / "config.toml").read_text())
    tools = written["mcp_servers"]["tests"].get("tools", {})
    assert tools == {"crash": {"enabled": False}, "echo": {"approval": "always"}}
    status = app.api("GET", "/api/mcp/servers")["servers"][0]
    assert status["disabledTools"] == ["crash"]
    assert "tests__crash" not in [tool["offeredAs"] for tool in status["tools"]]

    claude = {
        "mcpServers": {"broken": {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]}}
    }
    dialog.locator("#mcp-import-text").fill(json.dumps(claude))
    dialog.locator("#mcp-import").click()
    broken = dialog.locator('.mcp-server[data-server="broken"]')
    # An import starts nothing: each server waits, its command shown, for the person's yes.
    expect(broken).to_have_attribute("data-state", "awaiting_approval")
    expect(broken).to_contain_text("waits for your yes")
    expect(broken.locator(".mcp-where")).to_contain_text("raise SystemExit(3)")
    expect(broken.locator("[data-restart]")).to_have_count(0)
    broken.locator("[data-allow]").click()
    expect(broken).to_have_attribute("data-state", "failed", timeout=60_000)
    expect(broken.locator(".mcp-error")).to_be_visible()
    ui.shot("mcp-settings")


def test_settings_add_a_server_with_the_form(start_foldline, fake_provider, make_ui):
    app = start(start_foldline, fake_provider)
    ui = make_ui(app)
    page = ui.page
    dialog = open_mcp_settings(ui)
    expect(dialog.locator('.mcp-server[data-server="tests"]')).to_be_visible()
    dialog.locator("#mcp-add > summary").click()
    form = dialog.locator("#mcp-add-form")

    # A name already taken: the server says so, and everything typed stays.
    ui.allow(r"status of (409|422)")
    form.locator("#mcp-add-name").fill("tests")
    form.locator("#mcp-add-command").fill(sys.executable)
    form.locator("#mcp-add-args").fill(str(SERVER_SCRIPT))
    form.locator('[data-add-pair="variable"]').click()
    form.locator('[data-pair-name="variable"]').fill("ADDED_TOKEN")
    form.locator('[data-pair-value="variable"]').fill("form-secret-value")
    form.locator("#mcp-add-approval").select_option("always")
    form.locator("#mcp-add-submit").click()
    problem = form.locator("#mcp-add-error")
    expect(problem).to_contain_text("exists already")
    expect(form.locator('[data-pair-value="variable"]')).to_have_value("form-secret-value")
    expect(form.locator("#mcp-add-args")).to_have_value(str(SERVER_SCRIPT))

    # An HTTP server takes a URL: switching transport shows its own fields.
    form.locator("#mcp-add-transport").select_option("http")
    expect(form.locator("#mcp-add-command")).to_be_hidden()
    form.locator("#mcp-add-url").fill("ftp://wrong.example/mcp")
    form.locator("#mcp-add-name").fill("added")
    form.locator("#mcp-add-submit").click()
    expect(problem).to_contain_text("http://")
    assert "added" not in tomllib.loads((app.data_dir / "config.toml").read_text())["mcp_servers"]

    form.locator("#mcp-add-transport").select_option("stdio")
    expect(form.locator("#mcp-add-command")).to_have_value(sys.executable)
    expect(problem).to_be_hidden()
    # The whole form in one picture: a taller window, the card scrolled to the top.
    size = page.viewport_size
    page.set_viewport_size({"width": 1280, "height": 1000})
    dialog.locator("#mcp-add > summary").evaluate("node => node.scrollIntoView()")
    ui.shot("mcp-add-server")
    page.set_viewport_size(size)
    form.locator("#mcp-add-submit").click()
    added = dialog.locator('.mcp-server[data-server="added"]')
    expect(added).to_contain_text("waits for your yes")
    expect(added).to_contain_text("ADDED_TOKEN=••••")
    expect(dialog).not_to_contain_text("form-secret-value")
    expect(form).to_be_hidden()  # the card folds away, emptied, once the server took it
    saved = tomllib.loads((app.data_dir / "config.toml").read_text())["mcp_servers"]["added"]
    assert saved == {
        "command": sys.executable,
        "args": [str(SERVER_SCRIPT)],
        "env": {"ADDED_TOKEN": "form-secret-value"},
        "approval": "always",
    }

    ui.shot("mcp-awaiting-approval")
    # It is a real server: allowed, it starts and lists its tools.
    added.locator("[data-allow]").click()
    expect(added).to_have_attribute("data-state", "running", timeout=60_000)
    expect(added.locator(".mcp-tools")).to_contain_text("added__echo")
    ui.shot("mcp-added-server")

    # The variable typed into the form reaches the server's process.
    app.script.add(
        tool_step(call("added__secret_env", {"name": "ADDED_TOKEN"})), text_step("It is set.")
    )
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    ui.send("Is the token there?")
    last_request = app.fake.requests[-1].model_request
    assert last_request is not None
    assert last_request.messages[-1].tool_results[0].output == "set"


def test_an_image_from_a_tool_is_shown_in_its_card(start_foldline, fake_provider, make_ui):
    app = start_foldline(
        CONFIG.format(
            base_url=fake_provider.openai_url, python=sys.executable, script=SERVER_SCRIPT
        )
        + 'approval = "always"\n'
    )
    app.script.add(tool_step(call("tests__picture")), text_step("Here is the pixel."))
    ui = make_ui(app)
    ui.open()
    ui.send("Draw a pixel")
    card = ui.page.locator("details.tool-card").first
    card.locator("summary").click()
    # Stored once like a person's file and fetched by its sha256: a thumbnail that
    # opens full size.
    image = card.locator(".tool-files .file-preview img")
    expect(image).to_be_visible()
    expect(image).to_have_attribute("src", re.compile(r"^data:image/png;base64,iVBOR"))
    ui.shot("mcp-image")
    card.locator(".tool-files .file-preview").click()
    expect(ui.page.locator(".lightbox img")).to_be_visible()
    ui.page.keyboard.press("Escape")
    expect(ui.page.locator(".lightbox")).to_have_count(0)


def test_a_reloaded_page_shows_the_waiting_call(start_foldline, fake_provider, make_ui):
    app = start(start_foldline, fake_provider)
    app.script.add(tool_step(call("tests__echo", {"text": "after reload"})), text_step("Done."))
    ui = make_ui(app)
    ui.open()
    page = ui.page
    page.locator("#composer-input").fill("Echo after a reload")
    page.locator("#composer-input").press("Enter")
    expect(page.locator(".approval-card")).to_be_visible(timeout=60_000)
    page.reload()
    expect(page.locator("#app")).not_to_have_attribute("data-state", "loading")
    page.locator(".conversation-item").first.click()
    card = page.locator(".approval-card")
    expect(card).to_contain_text("echo")
    card.locator('[data-decision="allow"]').click()
    expect(card).to_have_count(0)
    conversation = app.api("GET", "/api/conversations")["items"][0]["id"]
    page.wait_for_function(
        """async ([id, token]) => {
            const r = await fetch(`/api/conversations/${id}/messages`,
                {headers: {Authorization: `Bearer ${token}`}});
            const body = await r.json();
            return body.items.some((m) => m.role === "assistant" && m.status === "complete"
                && m.parts.some((p) => p.kind === "text" && p.text === "Done."));
        }""",
        arg=[conversation, app.token],
    )
