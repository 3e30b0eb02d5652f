"""Opening at the newest message paints one screenful first, then the rest of the page.

A conversation opens on its newest page of 50 messages, but only the newest few (enough
to fill the screen) are drawn before the first paint; the older ones of the page follow
in the next tasks, above the screen. The person must see none of it: the newest message
stays exactly where it was first painted while the rest arrives, the page ends up whole
and in order, and code in the messages drawn later is still highlighted once scrolled to.
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import expect

from foldline.core.messages import Message, assistant, user
from foldline.store import Store

COUNT = 300
PAGE = 50
# Sub-pixel rounding of the scroll position: a person sees nothing below a pixel or two.
JUMP_LIMIT_PX = 2
CODE = "```python\ndef step(n):\n    return n * 31 % 65521\n```\n"

# After every change of the list (a mutation observer runs right after the task that made
# it, scroll corrections included): how many messages are drawn, how far the newest one's
# bottom is above the view's bottom, and where the first drawn message starts below the
# view's top (> 0: empty space above it).
SAMPLER = """
window.__drawn = [];
addEventListener('DOMContentLoaded', () => {
  const scroller = document.getElementById('chat-scroll');
  const inner = document.getElementById('chat-inner');
  new MutationObserver(() => {
    const messages = inner.querySelectorAll('.message');
    const newest = inner.querySelector('.message[data-index="NEWEST"]');
    if (!newest) return;
    const view = scroller.getBoundingClientRect();
    window.__drawn.push({
      drawn: messages.length,
      newestGap: view.bottom - newest.getBoundingClientRect().bottom,
      firstTop: messages[0].getBoundingClientRect().top - view.top,
    });
  }).observe(inner, { childList: true });
});
""".replace("NEWEST", str(COUNT - 1))

DRAWN_INDICES = (
    "() => [...document.querySelectorAll('#chat-inner .message')].map(e => Number(e.dataset.index))"
)


def answer(n: int) -> str:
    """Answers of uneven heights, a code block in every other one."""
    body = "\n\n".join(f"Paragraph {p} of answer {n}." for p in range(n % 5))
    return f"Answer {n}.\n\n{body}\n\n{CODE if n % 2 == 0 else ''}"


def seed(data_dir: Path) -> str:
    data_dir.mkdir(parents=True, exist_ok=True)
    with Store(data_dir / "foldline.db") as store:
        conversation = store.create_conversation(title="Three hundred messages")
        messages: list[Message] = []
        for n in range(COUNT // 2):
            messages += [user(f"Question {n}"), assistant(answer(n))]
        store.append_messages(conversation.id, messages)
        return conversation.id


def test_the_rest_of_the_first_page_arrives_in_order_without_moving_the_newest_message(
    start_foldline, make_ui, tmp_path
):
    conversation_id = seed(tmp_path / "data")
    ui = make_ui(start_foldline(None, data_dir=tmp_path / "data"))
    page = ui.page
    page.add_init_script(SAMPLER)
    ui.open(f"&c={conversation_id}")
    messages = page.locator("#chat-inner .message")
    expect(messages).to_have_count(PAGE)
    changes = page.evaluate("window.__drawn")

    first = changes[0]
    # The first drawing of the newest message held a screenful, not the whole page...
    assert first["drawn"] < PAGE, first
    # ...and that screenful filled the view: nothing empty is shown above it.
    assert first["firstTop"] <= 0, first
    # Later changes added the rest of the page, and the newest message never moved.
    assert [change["drawn"] for change in changes][-1] == PAGE, changes
    assert len(changes) > 1
    moves = [abs(change["newestGap"] - first["newestGap"]) for change in changes]
    print(f"\nfirst drawn: {first['drawn']} messages, then {[c['drawn'] for c in changes[1:]]}")
    print(f"largest move of the newest message: {max(moves):.2f} px")
    assert max(moves) < JUMP_LIMIT_PX, changes

    indices = page.evaluate(DRAWN_INDICES)
    assert indices == list(range(COUNT - PAGE, COUNT))
    expect(page.locator("#chat-inner")).to_have_attribute("data-lo", str(COUNT - PAGE))

    # An answer with code from the part drawn after the first paint: highlighted once on
    # screen, like the ones painted first.
    later_index = COUNT - PAGE + 3  # answer 126, which has code
    assert later_index < COUNT - first["drawn"]
    later = page.locator(f'.message[data-index="{later_index}"]')
    later.scroll_into_view_if_needed()
    expect(later.locator(".code-frame code.hljs span").first).to_be_visible()
    newest_code = page.locator(f'.message[data-index="{COUNT - 3}"]')  # answer 148
    expect(newest_code.locator(".code-frame code.hljs span").first).to_be_attached()

    # Scrolling further up loads older pages above, in order.
    inner = page.locator("#chat-inner")
    page.locator("#chat-scroll").evaluate("element => { element.scrollTop = 0; }")
    page.wait_for_function(
        f"() => Number(document.getElementById('chat-inner').dataset.lo) <= {COUNT - 2 * PAGE}"
    )
    expect(inner).to_have_attribute("data-loading", "false")
    # The window's bounds and the drawn list read at one moment: still near the top,
    # the view may load one more page between two separate reads.
    lo, drawn = page.evaluate(
        f"() => [Number(document.getElementById('chat-inner').dataset.lo), ({DRAWN_INDICES})()]"
    )
    assert drawn == list(range(lo, COUNT))


def test_the_same_text_drawn_again_and_in_two_places_is_drawn_whole(
    start_foldline, make_ui, tmp_path
):
    """Parsed Markdown is kept per text and copied for every message that shows it."""
    data_dir = tmp_path / "data"
    data_dir.mkdir(parents=True)
    same = f"The same answer, with code.\n\n{CODE}"
    with Store(data_dir / "foldline.db") as store:
        repeated = store.create_conversation(title="Repeated")
        store.append_messages(
            repeated.id,
            [user("First"), assistant(same), user("Second"), assistant(same)],
        )
        other = store.create_conversation(title="Other")
        store.append_messages(other.id, [user("Elsewhere"), assistant("Nothing to see.")])
    ui = make_ui(start_foldline(None, data_dir=data_dir))
    page = ui.page
    ui.open(f"&c={repeated.id}")

    def both_whole() -> None:
        for index in (1, 3):
            answer = page.locator(f'.message[data-index="{index}"]')
            expect(answer.locator(".md p")).to_have_text("The same answer, with code.")
            expect(answer.locator(".code-frame .copy-button")).to_have_count(1)
            expect(answer.locator(".code-frame code.hljs span").first).to_be_visible()

    both_whole()
    page.locator(f'.conversation-item[data-id="{other.id}"]').click()
    expect(page.locator('.message[data-index="1"]')).to_contain_text("Nothing to see.")
    page.locator(f'.conversation-item[data-id="{repeated.id}"]').click()
    both_whole()
