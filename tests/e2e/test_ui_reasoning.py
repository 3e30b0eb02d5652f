"""Reasoning in the browser: the collapsed "Thought for N s" block and the effort control."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from foldline.testing import Reply

MODEL = "claude-sonnet-4-6"
THOUGHT = "First I compare both options: A is cheaper, B keeps every message. B wins."


def config(base_url: str) -> str:
    return f"""\
[defaults]
model = "{MODEL}"

[providers.claude]
kind = "anthropic"
base_url = "{base_url}"
api_key = "sk-ant-e2e"

[models."{MODEL}"]
provider = "claude"
context_window = 200000
max_output_tokens = 8000

[compaction]
auto_title = false
"""


def test_reasoning_is_shown_collapsed_and_the_effort_is_set_per_conversation(
    start_foldline, make_ui, fake_provider
) -> None:
    app = start_foldline(config(fake_provider.anthropic_url))
    ui = make_ui(app)
    # The model thinks for about a second and a half before it answers.
    app.script.add(Reply(reasoning=THOUGHT, text="Option B.", chunk_chars=6, delay=0.12))
    ui.open()
    ui.page.locator("#composer-input").fill("Which option keeps everything?")
    ui.page.locator("#composer-input").press("Enter")
    # While the model thinks, the block says so and its text grows live.
    live = ui.page.locator(".message.streaming .reasoning.thinking summary")
    expect(live).to_have_text("Thinking…")
    ui.idle()

    block = ui.page.locator(".message .reasoning")
    expect(block).to_have_count(1)
    summary = block.locator("summary")
    expect(summary).to_have_text(re.compile(r"^Thought for [1-9]\d* s$"))
    expect(block).not_to_have_attribute("open", "")
    expect(block.locator(".reasoning-text")).not_to_be_visible()
    ui.shot("reasoning-collapsed")
    summary.click()
    expect(block.locator(".reasoning-text")).to_have_text(THOUGHT)
    expect(ui.page.locator(".message .md").last).to_have_text("Option B.")
    sent = app.fake.requests[-1].body
    assert sent["thinking"] == {"type": "adaptive"}
    assert sent["output_config"] == {"effort": "medium"}  # the catalog's default
    ui.shot("reasoning-block")

    control = ui.page.locator("#effort-control")
    expect(control).to_be_visible()
    select = ui.page.locator("#effort-select")
    expect(select.locator("option").first).to_have_text("Default (Medium)")
    select.select_option("high")
    expect(ui.page.locator(".notice")).to_contain_text("Reasoning effort changed")
    conversations = app.api("GET", "/api/conversations")["items"]
    assert conversations[0]["settings"] == {"reasoning": {"effort": "high"}}
    ui.shot("reasoning-effort-control")

    app.script.add(Reply(reasoning="Short thought.", text="Done."))
    ui.send("And now?")
    assert app.fake.requests[-1].body["output_config"] == {"effort": "high"}
    select.select_option("off")
    expect(select).to_have_value("off")
    app.script.add(Reply(text="No thinking."))
    ui.send("Quickly?")
    assert "thinking" not in app.fake.requests[-1].body


def test_a_gpt_answer_shows_its_reasoning_summary_and_reasoning_tokens(
    start_foldline, make_ui, fake_provider
) -> None:
    app = start_foldline(f"""\
[defaults]
model = "gpt-6.1-sol"

[providers.openai]
kind = "openai"
base_url = "{fake_provider.openai_url}"
api_key = "sk-e2e"

[models."gpt-6.1-sol"]
context_window = 200000
max_output_tokens = 8000

[compaction]
auto_title = false
""")
    ui = make_ui(app)
    app.script.add(Reply(reasoning="Summary: the person wants a yes or no.", text="Yes."))
    ui.open()
    ui.send("Is it ready?")
    record = app.fake.requests[-1]
    assert record.path == "/v1/responses" and record.body["store"] is False
    block = ui.page.locator(".message .reasoning")
    expect(block.locator("summary")).to_have_text(re.compile(r"^Thought"))
    block.locator("summary").click()
    expect(block.locator(".reasoning-text")).to_have_text("Summary: the person wants a yes or no.")
    expect(ui.page.locator(".message-meta").last).to_contain_text("reasoning)")
    # A [models] table without a provider line is offered by the provider of its family,
    # so the Reasoning control knows the model reasons.
    expect(ui.page.locator("#effort-select option").first).to_have_text("Default (Medium)")
    ui.shot("reasoning-gpt")


def test_reasoning_written_in_markdown_is_formatted(start_foldline, make_ui, fake_provider):
    app = start_foldline(config(fake_provider.anthropic_url))
    ui = make_ui(app)
    app.script.add(Reply(reasoning="**Weighing the request**\n\n- cost\n- safety", text="Done."))
    ui.open()
    ui.send("Think it over.")
    block = ui.page.locator(".message .reasoning")
    block.locator("summary").click()
    text = block.locator(".reasoning-text")
    expect(text.locator("strong")).to_have_text("Weighing the request")
    expect(text.locator("li")).to_have_count(2)
    assert "**" not in text.inner_text()
