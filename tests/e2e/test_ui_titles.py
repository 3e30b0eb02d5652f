"""The title the summarizer makes after the first exchange reaches the sidebar and header."""

from __future__ import annotations

from fake_model_config import FAKE_MODEL_CONFIG
from playwright.sync_api import expect

from foldline.testing import Reply

CONFIG = (
    FAKE_MODEL_CONFIG
    + """
[compaction]
auto_title = true
"""
)


def test_the_sidebar_shows_the_made_title(start_foldline, make_ui, fake_provider):
    app = start_foldline(CONFIG.format(base_url=fake_provider.openai_url))
    # The made title comes a few seconds after the answer, so the first message's title
    # is seen first (the page is told of the made one as soon as it is stored).
    app.script.add(
        Reply(text="Paris, since the tenth century."),
        Reply(text='"Capital of France."', chunk_chars=4, delay=0.5),
    )
    ui = make_ui(app)
    ui.open()
    page = ui.page
    ui.send("What is the capital of France?")
    expect(page.locator("#conversation-title")).to_have_text("What is the capital of France?")
    item = page.locator(".conversation-item")
    expect(item).to_have_count(1)
    expect(item).to_contain_text("Capital of France", timeout=20_000)
    expect(page.locator("#conversation-title")).to_have_text("Capital of France")
    title_request = app.script.calls[-1]
    assert title_request.tools == []
    assert "What is the capital of France?" in title_request.messages[0].text
    ui.shot("made-title")
