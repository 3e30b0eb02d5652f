"""Rendering cannot fail the page: hostile and pathological answers are shown as plain
text (that message only), and the app still opens on the conversation that holds them."""

from __future__ import annotations

from playwright.sync_api import expect

from foldline.core.messages import assistant, user
from foldline.store import Store

DEEP = ">" * 3000 + " deep quote"
HUGE_LINE = "*a_ [b](" * 130_000  # about a megabyte on one line, full of inline markers


def test_deep_nesting_and_a_megabyte_line_fall_back_to_plain_text(
    start_foldline, make_ui, tmp_path
):
    data_dir = tmp_path / "hostile"
    data_dir.mkdir()
    with Store(data_dir / "foldline.db") as store:
        conversation = store.create_conversation(title="Hostile answers")
        store.append_messages(
            conversation.id,
            [
                user("nest"),
                assistant(DEEP),
                user("one line"),
                assistant(HUGE_LINE),
                user("normal"),
                assistant("Still **formatted** here."),
            ],
        )
    ui = make_ui(start_foldline(None, data_dir=data_dir))
    page = ui.page
    ui.open(f"&c={conversation.id}")
    expect(page.locator("#app")).to_have_attribute("data-state", "open")
    deep = page.locator('.message[data-index="1"]')
    expect(deep.locator(".plain-note")).to_contain_text("nested too deeply")
    expect(deep.locator(".plain-text")).to_contain_text("deep quote")
    huge = page.locator('.message[data-index="3"]')
    expect(huge.locator(".plain-note")).to_contain_text("too long")
    # The other answers are formatted as usual.
    expect(page.locator('.message[data-index="5"] strong')).to_have_text("formatted")

    # Reopening the app lands on the same conversation and it opens again.
    page.reload()
    expect(page.locator("#app")).to_have_attribute("data-state", "open")
    expect(page.locator('.message[data-index="5"] strong')).to_have_text("formatted")
    expect(page.locator(".notice")).to_have_count(0)
    ui.shot("hostile-answers")


def test_invalid_utf16_and_a_renderer_failure_stay_inside_one_message(ui):
    ui.open()
    page = ui.page
    result = page.evaluate(
        """async () => {
          const { renderMarkdown } = await import('/js/markdown.js');
          const box = document.createElement('div');
          box.append(renderMarkdown('lone \\ud800 high and \\udfff low **bold**'));
          return { text: box.textContent, bold: box.querySelector('strong')?.textContent };
        }"""
    )
    assert result["bold"] == "bold"
    assert "high and" in result["text"]
    # A message whose parts are not what the renderer expects is drawn as its text alone.
    drawn = page.evaluate(
        """async () => {
          const { renderMessage } = await import('/js/messages.js');
          const parts = [{ kind: 'text', text: 'kept' }];
          parts.push({ kind: 'tool-call', get id() { throw new Error('broken'); } });
          const element = renderMessage(
            { index: 0, role: 'assistant', parts, status: 'complete' },
            { tools: { resultFor: () => null, hasCall: () => false } },
          );
          return element.textContent;
        }"""
    )
    assert "kept" in drawn
    assert "could not be drawn" in drawn
