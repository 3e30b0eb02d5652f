"""Files in the UI: the attach button, paste and drop; chips removable before sending;
thumbnails and chips in the history; a refusal shown and nothing lost; the edit box."""

from __future__ import annotations

import base64
import re

from fake_model_config import FAKE_MODEL_CONFIG
from playwright.sync_api import expect

from foldline.testing import sample_files

VISION = FAKE_MODEL_CONFIG + "vision = true\n"
PNG = sample_files.png(320, 200, rgb=(230, 120, 40))
PDF = sample_files.pdf(["Quarterly report", "Second page"])
CODE = b"def answer():\n    return 42\n"
DATA_PNG = re.compile("^data:image/png;base64,")


def _payload(name: str, mime: str, data: bytes) -> dict:
    return {"name": name, "mimeType": mime, "buffer": data}


def _stored_parts(app, conversation_index: int = 0) -> list[dict]:
    conversation = app.api("GET", "/api/conversations")["items"][conversation_index]
    page = app.api("GET", f"/api/conversations/{conversation['id']}/messages")
    return page["items"][0]["parts"]


def _dispatch_files(page, selector: str, event: str, name: str, data: bytes, mime: str) -> None:
    """A paste or a drop of one file, as the browser delivers it (a DataTransfer)."""
    page.evaluate(
        """([selector, event, name, b64, mime]) => {
          const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
          const transfer = new DataTransfer();
          transfer.items.add(new File([bytes], name, { type: mime }));
          const target = document.querySelector(selector);
          if (event === "paste") {
            target.dispatchEvent(
              new ClipboardEvent("paste", { clipboardData: transfer, bubbles: true }),
            );
          } else {
            for (const type of ["dragenter", "dragover", "drop"]) {
              target.dispatchEvent(
                new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true }),
              );
            }
          }
        }""",
        [selector, event, name, base64.b64encode(data).decode(), mime],
    )


def test_attach_remove_and_send_files(start_foldline, make_ui, fake_provider):
    app = start_foldline(VISION.format(base_url=fake_provider.openai_url))
    ui = make_ui(app)
    ui.open()
    page = ui.page
    page.locator("#composer .file-input").set_input_files(
        [
            _payload("chart.png", "image/png", PNG),
            _payload("report.pdf", "application/pdf", PDF),
            _payload("answer.py", "text/x-python", CODE),
        ]
    )
    chips = page.locator("#composer-files .file-chip")
    expect(chips).to_have_count(3)
    expect(chips.nth(0)).to_contain_text("chart.png")
    expect(chips.nth(0).locator("img.file-thumb")).to_have_attribute("src", DATA_PNG)
    expect(chips.nth(1)).to_contain_text("report.pdf")
    ui.shot("files-tray")
    # A file is removable before sending.
    chips.nth(2).locator(".file-remove").click()
    expect(chips).to_have_count(2)
    # Files alone make a message: Send is enabled with an empty text box.
    expect(page.locator("#send-button")).to_be_enabled()
    page.locator("#composer-input").fill("What is in these?")
    page.locator("#composer-input").press("Enter")
    ui.idle()
    expect(chips).to_have_count(0)

    user = page.locator(".message.user").first
    thumb = user.locator(".file-preview img")
    expect(thumb).to_have_attribute("src", DATA_PNG)
    expect(user.locator(".file-chip.stored")).to_contain_text("report.pdf")
    expect(user.locator(".file-chip.stored")).to_contain_text("2 pages")
    parts = _stored_parts(app)
    assert [p.get("name") for p in parts] == [None, "chart.png", "report.pdf"]
    assert parts[1]["width"] == 320 and parts[1]["height"] == 200

    # A thumbnail opens the image full size; Esc closes it.
    user.locator(".file-preview").click()
    expect(page.locator(".lightbox img")).to_be_visible()
    ui.shot("files-lightbox")
    page.keyboard.press("Escape")
    expect(page.locator(".lightbox")).to_have_count(0)
    ui.shot("files-history")

    # A file chip downloads the file itself.
    with page.expect_download() as download:
        user.locator(".file-chip.stored").click()
    path = download.value.path()
    assert path is not None and path.read_bytes() == PDF


def test_paste_and_drop_add_files(start_foldline, make_ui, fake_provider):
    app = start_foldline(VISION.format(base_url=fake_provider.openai_url))
    ui = make_ui(app)
    ui.open()
    page = ui.page
    _dispatch_files(page, "#composer-input", "paste", "image.png", PNG, "image/png")
    _dispatch_files(page, "#composer", "drop", "notes.md", b"# Notes\n", "text/markdown")
    chips = page.locator("#composer-files .file-chip")
    expect(chips).to_have_count(2)
    expect(chips.nth(0)).to_contain_text("image.png")
    expect(chips.nth(1)).to_contain_text("notes.md")
    page.locator("#send-button").click()
    ui.idle()
    assert [p["name"] for p in _stored_parts(app)] == ["image.png", "notes.md"]
    # A message of files only is named after them.
    expect(page.locator("#conversation-title")).to_have_text("image.png, notes.md")


def test_a_refused_file_is_shown_and_nothing_is_lost(ui):
    # The default test model is not marked `vision`: the server refuses the image.
    ui.allow("422")
    ui.open()
    page = ui.page
    page.locator("#composer .file-input").set_input_files([_payload("chart.png", "image/png", PNG)])
    page.locator("#composer-input").fill("Look")
    page.locator("#composer-input").press("Enter")
    notice = page.locator(".notice.error")
    expect(notice).to_contain_text("fake-model")
    expect(notice).to_contain_text("vision")
    ui.shot("files-refused")
    # The text and the file are still there to fix and resend; nothing was stored.
    expect(page.locator("#composer-input")).to_have_value("Look")
    expect(page.locator("#composer-files .file-chip")).to_have_count(1)
    conversation = ui.app.api("GET", "/api/conversations")["items"][0]
    assert ui.app.api("GET", f"/api/conversations/{conversation['id']}/messages")["total"] == 0
    # A type Foldline does not take is refused in the page already.
    page.locator("#composer .file-input").set_input_files(
        [_payload("archive.zip", "application/zip", b"PK\x03\x04")]
    )
    expect(page.locator(".notice.error").last).to_contain_text("archive.zip")
    expect(page.locator("#composer-files .file-chip")).to_have_count(1)


def test_the_edit_box_keeps_removes_and_adds_files(start_foldline, make_ui, fake_provider):
    app = start_foldline(VISION.format(base_url=fake_provider.openai_url))
    ui = make_ui(app)
    ui.open()
    page = ui.page
    page.locator("#composer .file-input").set_input_files(
        [_payload("chart.png", "image/png", PNG), _payload("answer.py", "text/x-python", CODE)]
    )
    page.locator("#composer-input").fill("First version")
    page.locator("#composer-input").press("Enter")
    ui.idle()

    user = page.locator(".message.user").first
    user.hover()
    user.locator(".edit-button").click()
    editor = page.locator(".message-editor")
    chips = editor.locator(".file-chip")
    expect(chips).to_have_count(2)
    expect(chips.nth(0).locator("img.file-thumb")).to_have_attribute("src", DATA_PNG)
    chips.nth(1).locator(".file-remove").click()
    editor.locator(".file-input").set_input_files([_payload("notes.md", "text/markdown", b"# N")])
    expect(chips).to_have_count(2)
    ui.shot("files-edit")
    editor.locator(".edit-input").fill("Second version")
    editor.locator(".edit-send").click()
    ui.idle()
    parts = _stored_parts(app)
    assert [p.get("name") for p in parts] == [None, "chart.png", "notes.md"]


def test_a_fold_lists_its_files_and_model_view_their_cost(start_foldline, make_ui, fake_provider):
    app = start_foldline(VISION.format(base_url=fake_provider.openai_url))
    ui = make_ui(app)
    ui.open()
    page = ui.page
    page.locator("#composer .file-input").set_input_files([_payload("chart.png", "image/png", PNG)])
    page.locator("#composer-input").fill("Keep this chart in mind")
    page.locator("#composer-input").press("Enter")
    ui.idle()
    page.locator("#model-view-button").click()
    view = page.locator("#model-view")
    # 320x200 px at high detail: one 512 px tile, 85 + 170 tokens, beside the label.
    expect(view).to_contain_text("[attachment chart.png · image/png · ")
    ui.shot("files-model-view")
    conversation = app.api("GET", "/api/conversations")["items"][0]["id"]
    page.locator("#model-view-button").click()
    # Enough text after the file for a fold to be worth it: it must save more than its
    # summary and the recall tools a folded conversation is offered take.
    for number in range(5):
        ui.send(f"Message number {number} about the parser. " * 12)
    app.api("POST", f"/api/conversations/{conversation}/compact", {})
    page.reload()
    expect(page.locator(".fold-files")).to_contain_text("1 file folded: chart.png")
    ui.shot("files-fold-line")


def test_a_file_dropped_anywhere_in_the_window_waits_in_the_tray(
    start_foldline, make_ui, fake_provider
):
    app = start_foldline(VISION.format(base_url=fake_provider.openai_url))
    conversation = app.create_conversation("Drop")
    app.send(conversation["id"], "hello")
    ui = make_ui(app)
    ui.open(f"&c={conversation['id']}")
    page = ui.page
    # On the conversation, on the sidebar: as ChatGPT and Claude Desktop take them.
    _dispatch_files(page, "#chat-inner .message", "drop", "a.md", b"# A\n", "text/markdown")
    _dispatch_files(page, "#sidebar", "drop", "b.md", b"# B\n", "text/markdown")
    expect(page.locator("#composer-files .file-chip")).to_have_count(2)
    # A message's editor keeps its own drop: the file goes to it, not to the composer.
    page.locator(".message.user .edit-button").last.click()
    _dispatch_files(page, ".message-editor", "drop", "c.md", b"# C\n", "text/markdown")
    expect(page.locator(".message-editor .file-chip")).to_contain_text("c.md")
    expect(page.locator("#composer-files .file-chip")).to_have_count(2)
