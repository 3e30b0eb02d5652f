"""Settings → Tools (MCP): a server with a command that does not exist shows as failed at
once, Edit fixes it in place, Remove deletes it; problems stay in the server's card, and
the panel fits a phone."""

from __future__ import annotations

import re
import sys
import tomllib

from mcp_ui_setup import SERVER_SCRIPT, start
from playwright.sync_api import expect


def saved_servers(app) -> dict:
    return tomllib.loads((app.data_dir / "config.toml").read_text()).get("mcp_servers", {})


def open_mcp(ui, phone: bool = False):
    ui.open()
    if phone:
        ui.page.locator("#sidebar-button").click()
    ui.page.locator("#settings-button").click()
    dialog = ui.page.locator("#settings-dialog")
    dialog.locator('[data-tab="mcp"]').click()
    return dialog


def test_a_broken_server_is_failed_at_once_then_edited_and_removed(
    start_foldline, fake_provider, make_ui
):
    app = start(start_foldline, fake_provider)
    ui = make_ui(app)
    page = ui.page
    dialog = open_mcp(ui)
    dialog.locator("#mcp-add > summary").click()
    form = dialog.locator("#mcp-add-form")
    form.locator("#mcp-add-name").fill("typo")
    form.locator("#mcp-add-command").fill("no-such-command-xyz")
    form.locator("#mcp-add-submit").click()
    typo = dialog.locator('.mcp-server[data-server="typo"]')
    expect(typo).to_have_attribute("data-state", "failed")
    expect(typo.locator(".mcp-error code")).to_have_text("no-such-command-xyz")

    # Adding it again: the reason in the form, names as code, no notice left behind.
    ui.allow(r"status of 409")
    dialog.locator("#mcp-add > summary").click()
    form.locator("#mcp-add-name").fill("typo")
    form.locator("#mcp-add-command").fill(sys.executable)
    form.locator("#mcp-add-submit").click()
    expect(form.locator("#mcp-add-error")).to_contain_text("exists already")
    expect(form.locator("#mcp-add-error code")).to_have_text("typo")
    expect(form.locator("#mcp-add-error")).not_to_contain_text("`")
    expect(page.locator("#notices .notice")).to_have_count(0)
    dialog.locator("#mcp-add > summary").click()

    # Edit: the command and arguments, in the server's card.
    typo.locator("[data-edit='typo']").click()
    edit = typo.locator("form.mcp-edit")
    # One Save on screen: the form's own, not also the Settings dialog's.
    expect(dialog.get_by_role("button", name=re.compile(r"^Save"))).to_have_count(1)
    edit.locator("[data-edit='command']").fill(sys.executable)
    edit.locator("[data-edit='args']").fill(str(SERVER_SCRIPT))
    edit.locator("button", has_text="Save changes").click()
    expect(typo).to_have_attribute("data-state", "awaiting_approval")
    expect(typo.locator(".mcp-error:visible")).to_have_count(0)
    assert saved_servers(app)["typo"] == {"command": sys.executable, "args": [str(SERVER_SCRIPT)]}
    typo.locator("[data-allow]").click()
    expect(typo).to_have_attribute("data-state", "running", timeout=60_000)
    expect(typo.locator(".mcp-tools")).to_contain_text("typo__echo")

    # Edit a secret of the other server: left empty, the stored value stays.
    tests = dialog.locator('.mcp-server[data-server="tests"]')
    tests.locator("[data-edit='tests']").click()
    tests.locator("form.mcp-edit button", has_text="Add variable").click()
    tests.locator("form.mcp-edit [data-pair-name='variable']").last.fill("EXTRA")
    tests.locator("form.mcp-edit [data-pair-value='variable']").last.fill("extra-value")
    tests.locator("form.mcp-edit button", has_text="Save changes").click()
    expect(tests).to_contain_text("EXTRA=")
    assert saved_servers(app)["tests"]["env"] == {
        "API_TOKEN": "ui-secret-value",
        "EXTRA": "extra-value",
    }
    expect(dialog).not_to_contain_text("extra-value")

    # Remove asks first, then the server is gone from the list and from config.toml.
    typo.locator("[data-remove='typo']").click()
    page.locator("dialog.modal", has_text="Remove typo?").get_by_role(
        "button", name="Remove"
    ).click()
    expect(typo).to_have_count(0)
    assert "typo" not in saved_servers(app)
    expect(tests).to_be_visible()
    ui.shot("mcp-manage")


def test_the_mcp_panel_fits_a_phone(start_foldline, fake_provider, make_ui):
    app = start(start_foldline, fake_provider)
    ui = make_ui(app)
    page = ui.page
    page.set_viewport_size({"width": 390, "height": 844})
    dialog = open_mcp(ui, phone=True)
    server = dialog.locator('.mcp-server[data-server="tests"]')
    server.locator("[data-restart]").click()
    expect(server).to_have_attribute("data-state", "running", timeout=60_000)
    width = page.evaluate("document.documentElement.clientWidth")
    for element in [
        server.locator("[data-restart]"),
        server.locator("[data-remove='tests']"),
        server.locator("table.mcp-tools"),
        server.locator("[data-tool-approval='echo']"),
    ]:
        box = element.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width + 1, (element, box)
    server.locator("[data-edit='tests']").click()
    box = server.locator("form.mcp-edit").bounding_box()
    assert box["x"] + box["width"] <= width + 1, box
    ui.shot("phone-settings-mcp-server")
