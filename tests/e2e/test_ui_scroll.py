"""The message list does not move under the reader.

A long conversation with answers of very different heights (one line to a long essay,
code blocks that are highlighted lazily) must open exactly at its newest message, come
back there with "Latest" and after a reload, and keep the text the person is reading
where it is while older pages load and heights settle: each wheel step may move the text
by the scroll itself, and by at most JUMP_LIMIT_PX more.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from foldline.core.messages import Message, assistant, user
from foldline.store import Store

JUMP_LIMIT_PX = 50
WHEEL_PX = 600
COUNT = 2000
# Scrolling all the way up reads 14 pages and makes the page let go of the newest ones
# (it holds at most 400 messages): every kind of step the reader can meet, at a third
# of the wheel steps of the whole 2,000.
SCROLLED_COUNT = 700

CODE = "```python\ndef step(n):\n    return n * 31 % 65521\n```\n"


def answer(n: int) -> str:
    """Answers from one line to dozens of paragraphs, some with code, in a stable order."""
    paragraphs = (n * 7919) % 9
    body = "\n\n".join(
        f"Paragraph {p} of answer {n}: the fold keeps every message, and this line is long "
        "enough to wrap on a desktop window so that heights differ from message to message."
        for p in range(paragraphs)
    )
    return f"Answer {n}.\n\n{body}\n\n{CODE if n % 3 == 0 else ''}"


def seed_long(data_dir: Path, count: int = COUNT) -> str:
    data_dir.mkdir(parents=True, exist_ok=True)
    with Store(data_dir / "foldline.db") as store:
        conversation = store.create_conversation(title="Long and uneven")
        messages: list[Message] = []
        for n in range(count // 2):
            messages += [user(f"Question {n}"), assistant(answer(n))]
        store.append_messages(conversation.id, messages)
        return conversation.id


# How far the newest message's bottom is from the bottom of the scrolled view (negative:
# below it, out of sight) and how far the view is from its end.
END_OFFSETS = """() => {
  const scroller = document.getElementById('chat-scroll');
  const last = [...document.querySelectorAll('.message')].at(-1);
  const view = scroller.getBoundingClientRect();
  return {
    index: Number(last.dataset.index),
    lastBottomAbove: view.bottom - last.getBoundingClientRect().bottom,
    fromEnd: scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight,
  };
}"""

# Resolves once the view is settled: no page loading and the same scroll position and
# height for six frames in a row.
SETTLED = """() => new Promise((resolve) => {
  const scroller = document.getElementById('chat-scroll');
  const inner = document.getElementById('chat-inner');
  let last = '';
  let same = 0;
  const tick = () => {
    const now = `${scroller.scrollTop}/${scroller.scrollHeight}/${inner.dataset.loading}`;
    same = now === last && inner.dataset.loading !== 'true' ? same + 1 : 0;
    last = now;
    if (same >= 6) resolve(true); else requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
})"""

# The message under the middle of the view: its index and where its top is on screen.
UNDER_READER = """() => {
  const scroller = document.getElementById('chat-scroll');
  const view = scroller.getBoundingClientRect();
  const middle = view.top + view.height / 2;
  for (const element of document.querySelectorAll('.message')) {
    const box = element.getBoundingClientRect();
    if (box.bottom > middle) {
      return { index: element.dataset.index, top: box.top, scrollTop: scroller.scrollTop,
               lo: Number(document.getElementById('chat-inner').dataset.lo) };
    }
  }
  return null;
}"""

TOP_OF = """(index) => {
  const element = document.querySelector(`.message[data-index="${index}"]`);
  return element ? element.getBoundingClientRect().top : null;
}"""


def settle(page: Page) -> None:
    page.evaluate(SETTLED)


# True once the newest message ends inside the view and the view is at its very end
# (what `assert_at_end` asserts), so the test waits for that state rather than a time.
AT_END = f"""(last) => {{
  if (!document.querySelector('.message')) return false;
  const offsets = ({END_OFFSETS})();
  return offsets.index === last && offsets.lastBottomAbove >= 0
    && offsets.lastBottomAbove <= 120 && offsets.fromEnd <= 2;
}}"""


def assert_at_end(page: Page, label: str) -> dict[str, Any]:
    settle(page)
    with contextlib.suppress(PlaywrightTimeoutError):  # the asserts below then say how
        page.wait_for_function(AT_END, arg=COUNT - 1, timeout=10_000)
    settle(page)
    offsets = page.evaluate(END_OFFSETS)
    assert offsets["index"] == COUNT - 1, (label, offsets)
    # The newest message ends inside the view (only the list's bottom padding is below it)
    # and the view is scrolled to its very end.
    assert 0 <= offsets["lastBottomAbove"] <= 120, (label, offsets)
    assert offsets["fromEnd"] <= 2, (label, offsets)
    print(f"\n{label}: newest message ends {offsets['lastBottomAbove']:.0f} px above the bottom")
    return offsets


def test_opens_at_the_newest_message_after_open_latest_and_reload(
    start_foldline, make_ui, tmp_path
):
    data_dir = tmp_path / "long"
    conversation_id = seed_long(data_dir)
    ui = make_ui(start_foldline(None, data_dir=data_dir))
    page = ui.page
    ui.open(f"&c={conversation_id}")
    assert_at_end(page, "open")

    # Far up, then "Latest".
    scroller = page.locator("#chat-scroll")
    for _ in range(6):
        scroller.evaluate("element => { element.scrollTop = 0; }")
        settle(page)
    page.locator("#jump-latest").click()
    assert_at_end(page, "latest")

    page.reload()
    expect(page.locator("#app")).not_to_have_attribute("data-state", "loading")
    assert_at_end(page, "reload")


def test_scrolling_up_through_a_long_history_never_jumps(start_foldline, make_ui, tmp_path):
    data_dir = tmp_path / "long"
    conversation_id = seed_long(data_dir, SCROLLED_COUNT)
    ui = make_ui(start_foldline(None, data_dir=data_dir))
    page = ui.page
    ui.open(f"&c={conversation_id}")
    expect(page.locator(f'.message[data-index="{SCROLLED_COUNT - 1}"]')).to_be_attached()
    settle(page)
    page.locator("#chat-scroll").hover()

    jumps: list[float] = []
    for _ in range(3000):
        before = page.evaluate(UNDER_READER)
        if before["lo"] == 0 and before["scrollTop"] == 0:
            break
        page.mouse.wheel(0, -WHEEL_PX)
        settle(page)
        top = page.evaluate(TOP_OF, before["index"])
        assert top is not None, "the message under the reader left the page"
        expected = min(WHEEL_PX, before["scrollTop"])
        jumps.append(abs((top - before["top"]) - expected))
    else:
        raise AssertionError("never reached the beginning")
    expect(page.locator('.message[data-index="0"]')).to_be_in_viewport()
    worst = max(jumps)
    print(f"\n{len(jumps)} wheel steps, worst jump {worst:.1f} px")
    assert worst <= JUMP_LIMIT_PX, sorted(jumps)[-10:]
