"""A recall call (the model looking back with searchHistory / searchConversations) shows as
one compact line whose numbers jump to the messages it found, loading their page when
they are far; a hit in another conversation opens that conversation at its message; the
tool's output stays one click away and Model view shows it as the model read it."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import expect

from foldline.core.messages import Message, ToolCallPart, ToolResultPart, assistant, user
from foldline.store import Store

COUNT = 200


def seed(data_dir: Path) -> tuple[str, str]:
    """A long conversation that ends with two recall calls, and another conversation the
    second call found a message in."""
    data_dir.mkdir(parents=True, exist_ok=True)
    with Store(data_dir / "foldline.db") as store:
        other = store.create_conversation(title="Kitchen renovation")
        store.append_messages(
            other.id,
            [
                user("Which tiles?"),
                assistant("Terracotta or sage green."),
                user("Let's go with sage green."),
                assistant("Sage green it is."),
            ],
        )
        conversation = store.create_conversation(title="Project notes")
        messages: list[Message] = []
        for n in range(COUNT // 2):
            said = "We picked PostgreSQL for the database." if n == 6 else f"Question {n}"
            messages += [user(said), assistant(f"Answer {n}")]
        messages.append(user("When did we pick the database, and what tiles did I choose?"))
        search = ToolCallPart(id="call_s", name="searchHistory", input={"query": "database choice"})
        others = ToolCallPart(id="call_o", name="searchConversations", input={"query": "tiles"})
        read = ToolCallPart(id="call_r", name="readHistory", input={"fromIndex": 12, "toIndex": 13})
        messages.append(assistant("Let me look back.", search, others, read))
        found = (
            "3 messages in this conversation match, best first:\n"
            "#12 person, 2025-03-04 10:12: We picked PostgreSQL for the database.\n"
            "#48 assistant, 2025-03-09 18:40: Answer 23\n"
            "#150 person, 2025-05-01 09:03: Question 75"
        )
        elsewhere = (
            "1 message in your other conversations match, best first:\n"
            f'#2 in conversation {other.id} "Kitchen renovation", person, '
            "2025-04-02 08:00: Let's go with sage green."
        )
        messages.append(
            Message(
                role="tool",
                parts=(
                    ToolResultPart(call_id="call_s", name="searchHistory", output=found),
                    ToolResultPart(call_id="call_o", name="searchConversations", output=elsewhere),
                    # A line of a message's own text that starts like a number is not one.
                    ToolResultPart(
                        call_id="call_r",
                        name="readHistory",
                        output=(
                            "#12 person, 2025-03-04 10:12:\nWe picked PostgreSQL.\n"
                            "#3 reasons below\n\n#13 assistant, 2025-03-04 10:13:\nAnswer 6"
                        ),
                    ),
                ),
            )
        )
        messages.append(assistant("You picked PostgreSQL in March, and sage green tiles."))
        store.append_messages(conversation.id, messages)
        return conversation.id, other.id


def test_a_recall_line_links_its_hits_near_and_far(start_foldline, make_ui, tmp_path):
    data_dir = tmp_path / "recall"
    cid, other = seed(data_dir)
    ui = make_ui(start_foldline(None, data_dir=data_dir))
    ui.open(f"&c={cid}")
    page = ui.page
    expect(page.locator(".message").last).to_contain_text("sage green tiles")

    line = page.locator(".recall-line").first
    expect(line).to_contain_text("Looked back for “database choice”")
    expect(line.locator(".recall-hit")).to_have_text(["#12", "#48", "#150"])
    # The tool card is folded away under the line until asked for.
    card = page.locator(".recall-call .tool-card").first
    expect(card).to_be_hidden()
    read = page.locator(".recall-line").nth(2)
    expect(read).to_contain_text("Read back #12–#13")
    expect(read.locator(".recall-hit")).to_have_text(["#12", "#13"])
    ui.shot("recall-line")

    # The output is one click away.
    line.get_by_role("button", name="output").click()
    expect(card).to_be_visible()
    expect(card.locator(".tool-output")).to_contain_text("#48 assistant, 2025-03-09 18:40")

    # Model view shows what the tools returned, as the model read it.
    page.locator("#model-view-button").click()
    expect(page.locator("#model-view")).to_contain_text(
        "#12 person, 2025-03-04 10:12: We picked PostgreSQL for the database."
    )
    expect(page.locator("#model-view")).to_contain_text(f"#2 in conversation {other}")
    page.locator("#model-view-button").click()

    # #12 is far above the loaded page: the click loads its page and shows it.
    expect(page.locator('.message[data-index="12"]')).to_have_count(0)
    line.get_by_role("button", name="Show message #12").click()
    target = page.locator('.message[data-index="12"]')
    expect(target).to_be_in_viewport()
    expect(target).to_have_class(re.compile(r"\bsearch-hit\b"))
    expect(target).to_contain_text("We picked PostgreSQL for the database.")
    ui.shot("recall-jump-far")

    # Back at the newest messages: a hit in another conversation names it and opens it
    # at its message.
    ui.open(f"&c={cid}")
    page.reload()
    across = page.locator(".recall-line").nth(1)
    expect(across).to_contain_text("Looked back in other conversations for “tiles”")
    link = across.locator(".recall-hit")
    expect(link).to_have_text("Kitchen renovation #2")
    link.click()
    expect(page.locator(".message")).to_have_count(4)
    there = page.locator('.message[data-index="2"]')
    expect(there).to_contain_text("Let's go with sage green.")
    expect(there).to_have_class(re.compile(r"\bsearch-hit\b"))
    assert ui.unexpected_problems() == []
