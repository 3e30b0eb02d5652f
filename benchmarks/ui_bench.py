"""How fast the browser UI opens and scrolls a 10,000-message conversation.

The store is filled directly with a realistic mix (short questions, Markdown answers
with code blocks, tool calls and results, a fold in the middle), a real Foldline server
runs in-process, and Debian's Chromium (headless, through Playwright) opens it:

- *cold open*: navigation until the newest message is on screen (page load, scripts,
  settings, conversation list, the newest page of messages, rendering), and until the
  whole first page of 50 messages is drawn;
- *switch*: with the app loaded, a click on the conversation in the sidebar until its
  newest message is on screen;
- *older page*: scrolling to the top until the previous page is drawn (one per step);
- *longest task*: the longest main-thread task Chromium reported during the whole run
  (a "freeze" is a long task; Chromium reports tasks over 50 ms);
- *DOM messages*: how many message elements exist after paging up 30 pages;
- *scroll frames*: from the newest message, wheel steps of 120 px upwards (about ten a
  second, as a person reads back) while every animation frame is timed: the share of
  frames longer than 50 ms, the 99th percentile and the longest frame.
- *versions*: message 2 and the last question each have a second version. A search for
  a word only message 2's holds, and a click on the result (on that other version) until
  it is on screen; a click on its `‹` until the long branch is back (both move the whole
  history's path); on the last question, a click on `›` until its second version is on
  screen (a move of two messages); for each, also until the meter shows the new path's
  count (its token count differs from the one before the click).

Times marked *(frame)* are read in the page: a probe runs in every animation frame (just
before it is painted) and notes the first frame in which its condition holds, counted
from the navigation's start or from the click event. The *driver* rows are the same
moments as Playwright's waits see them from Python; their polling adds up to ~100 ms, and
they are kept to compare with earlier runs.

    .venv/bin/python benchmarks/ui_bench.py --messages 10000 --repeat 5
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Locator, Page, sync_playwright

from foldline.core.messages import (
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    assistant,
    tool_results,
    user,
)
from foldline.core.state import CompactionState, SummarizedRange
from foldline.server.app import create_app
from foldline.server.runner import start_server_in_thread
from foldline.store import Store

TOKEN = "bench-token-0123456789abcdefghijklmnopqrstuvwxyz"
PAGE_SIZE = 50
"""Messages in a page of the UI (`PAGE_SIZE` in frontend/js/chat-paging.js)."""
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
CONFIG = """\
[defaults]
model = "bench-model"

[providers.local]
kind = "openai-compatible"
base_url = "http://127.0.0.1:9/v1"

[models."bench-model"]
provider = "local"
context_window = 200000
max_output_tokens = 4096
"""
ANSWER = """Here is what I found about **item {n}**:

1. The parser reads the header first.
2. Then it validates the `checksum` field.

```python
def checksum(data: bytes) -> int:
    total = 0
    for byte in data:
        total = (total * 31 + byte) % 65521
    return total
```

That keeps it under the limit; see the notes above for the edge cases.
"""
LONG_TASK_OBSERVER = """
window.__frames = null;
window.__longTasks = [];
new PerformanceObserver(list => {
  for (const entry of list.getEntries()) window.__longTasks.push(entry.duration);
}).observe({ type: 'longtask', buffered: true });
// Probes: a test run in every animation frame (just before it is painted) until it holds;
// `at` is then the page's clock (ms since the navigation started). The last click's time
// is kept, so a probe can be read from the click on.
window.__probes = {};
window.__clickAt = null;
addEventListener('click', event => { window.__clickAt = event.timeStamp; }, true);
window.__onScreen = element => {
  if (!element) return false;
  const box = element.getBoundingClientRect();
  return box.height > 0 && box.bottom > 0 && box.top < innerHeight;
};
window.__probe = (name, test) => { window.__probes[name] = { test, at: null }; };
const tick = (now) => {
  if (window.__frames) window.__frames.push(now);
  for (const probe of Object.values(window.__probes)) {
    if (probe.at === null && probe.test()) probe.at = performance.now();
  }
  requestAnimationFrame(tick);
};
requestAnimationFrame(tick);
"""
OPEN_PROBES = """
window.__probe('newest', () => window.__onScreen(document.querySelector('{newest}')));
window.__probe('page', () => document.querySelectorAll('#chat-inner .message').length >= {page});
"""
METER_TEXT = "document.getElementById('meter-text').textContent"


def history(count: int) -> list[Message]:
    """`count` messages: mostly question/answer pairs, a tool exchange every tenth turn."""
    messages: list[Message] = []
    n = 0
    while len(messages) < count:
        if n % 10 == 9 and count - len(messages) >= 4:
            call_id = f"call_{n}"
            messages += [
                user(f"Question {n}: list the files please"),
                assistant(
                    "",
                    ToolCallPart(id=call_id, name="list_files", input={"path": f"src/{n}"}),
                ),
                tool_results(
                    ToolResultPart(
                        call_id=call_id,
                        name="list_files",
                        output="\n".join(f"src/{n}/file_{i}.py" for i in range(20)),
                    )
                ),
                Message(
                    role="assistant", parts=(TextPart(text=f"There are 20 files in src/{n}."),)
                ),
            ]
        else:
            messages += [user(f"Question {n}: what about item {n}?"), assistant(ANSWER.format(n=n))]
        n += 1
    return messages[:count]


def seed(data_dir: Path, count: int) -> tuple[str, str]:
    """The conversation's id, and the id of its last message (the leaf to go back to)."""
    with Store(data_dir / "foldline.db") as store:
        conversation = store.create_conversation(title=f"{count:,} messages", model="bench-model")
        messages = history(count)
        for start in range(0, len(messages), 1000):
            store.append_messages(conversation.id, messages[start : start + 1000])
        # A second version of message 2 and of the last question (see `measure`).
        path = store.list_messages(conversation.id, offset=0, limit=count)
        store.branch(conversation.id, path[1].id, user("Question 1, edited: zanzibar"))
        store.switch_branch(conversation.id, path[-1].id)
        store.branch(conversation.id, path[-3].id, user("The last question, edited"))
        store.switch_branch(conversation.id, path[-1].id)
        split = count // 2
        # A fold in the middle, so the fold line and the dimming are part of the cost.
        state = CompactionState(
            version=1,
            compacted_at="2025-01-01T00:00:00Z",
            summary_message="## Active Task\nBenchmark.\n",
            api_start_index=split - split % 2,
            summarized_range=SummarizedRange(
                from_index=0, to_index=split - split % 2, message_count=split - split % 2
            ),
            strategy="structured",
            trigger="auto",
            tokens_before=150_000,
            tokens_after=60_000,
        )
        store.commit_fold(conversation.id, state, expected_version=0)
        return conversation.id, path[-1].id


def scroll_frames(page: Page, steps: int) -> list[float]:
    """Frame durations (s) while the wheel scrolls up `steps` times, 120 px each."""
    page.locator("#chat-scroll").hover()
    page.evaluate("window.__frames = []")
    for _ in range(steps):
        page.mouse.wheel(0, -120)
        page.wait_for_timeout(100)
    stamps = page.evaluate("() => { const f = window.__frames; window.__frames = null; return f; }")
    return [(b - a) / 1000 for a, b in itertools.pairwise(stamps)]


def timed(action: Callable[[], None], done: Locator) -> float:
    """Seconds from `action` until `done` is on the page, as the test driver sees it (its
    polling adds up to ~100 ms; the probes below time the frame in the page)."""
    started = time.perf_counter()
    action()
    done.wait_for(state="attached", timeout=60_000)
    return time.perf_counter() - started


def probe(page: Page, name: str, test: str) -> None:
    """Start probe `name`: `test` (a JavaScript function) is checked in every frame."""
    page.evaluate(f"window.__probe({json.dumps(name)}, {test})")


def probed(page: Page, name: str, *, since_click: bool = True) -> float:
    """Seconds from the last click (or the navigation) to the first frame where `name` held."""
    page.wait_for_function(
        "name => window.__probes[name].at !== null", arg=name, timeout=60_000, polling=50
    )
    at, click = page.evaluate(f"[window.__probes[{json.dumps(name)}].at, window.__clickAt]")
    return (at - (click if since_click else 0)) / 1000


def clicked(
    page: Page, name: str, action: Callable[[], None], done: Locator, drawn: str
) -> dict[str, float]:
    """A click timed until `drawn` holds, and until the meter shows the new count."""
    meter = "document.getElementById('meter')"
    before = page.evaluate(f"{meter}.getAttribute('aria-valuenow')")
    page.evaluate("window.__clickAt = null")
    probe(page, name, drawn)
    counted = (
        f"() => {METER_TEXT} !== '—' "
        f"&& {meter}.getAttribute('aria-valuenow') !== {json.dumps(before)}"
    )
    probe(page, f"{name}_meter", counted)
    driver = timed(action, done)
    drawn = probed(page, name)
    meter_drawn = probed(page, f"{name}_meter")
    return {
        name: drawn,
        f"{name}_meter": meter_drawn,
        f"{name}_meter_lag": meter_drawn - drawn,
        f"{name}_driver": driver,
    }


def shown(selector: str, text: str = "", *, without: str = "") -> str:
    """A probe: the element is on screen (and holds `text`, and not `without`)."""
    return (
        f"() => {{ const e = document.querySelector({json.dumps(selector)}); "
        f"return window.__onScreen(e) && e.textContent.includes({json.dumps(text)}) "
        f"&& !({json.dumps(without)} && e.textContent.includes({json.dumps(without)})); }}"
    )


def versions(page: Page, count: int) -> dict[str, float]:
    """Switch versions at the start of the history and at its end (see the docstring)."""
    page.locator("#search").fill("zanzibar")
    result = page.locator(".conversation-item", has=page.locator(".other-version"))
    result.wait_for(timeout=60_000)
    second = page.locator('.message[data-index="2"]')
    start = clicked(
        page,
        "version_start",
        result.click,
        second.locator(".bubble", has_text="zanzibar"),
        shown('.message[data-index="2"]', "zanzibar"),
    )
    # Back on the long branch, where it was left: its newest message (leaving a leaf
    # stamps it, so the leaf left last is the one a switch returns to).
    back = clicked(
        page,
        "version_back",
        lambda: second.locator(".version-step.previous").click(),
        page.locator(f'#chat-inner[data-total="{count}"]'),
        shown(f'#chat-inner[data-total="{count}"] .message[data-index="2"]', without="zanzibar"),
    )
    page.locator("#search").fill("")
    page.locator("#jump-latest").click()
    last = page.locator(f'.message[data-index="{count - 2}"]')
    last.wait_for(timeout=60_000)
    end = clicked(
        page,
        "version_end",
        lambda: last.locator(".version-step.next").click(),
        last.locator(".bubble", has_text="The last question, edited"),
        shown(f'.message[data-index="{count - 2}"]', "The last question, edited"),
    )
    return {**start, **back, **end}


def measure(
    url: str, conversation_id: str, leaf_id: str, count: int, pages_up: int, wheel_steps: int
) -> dict[str, float]:
    newest = f'.message[data-index="{count - 1}"]'
    # Each run starts on the long branch (the last run may have left the other one).
    request = urllib.request.Request(
        f"{url}/api/conversations/{conversation_id}/active-leaf",
        data=json.dumps({"messageId": leaf_id}).encode(),
        method="PUT",
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=60).close()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS
        )
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        context.add_init_script(LONG_TASK_OBSERVER)
        page = context.new_page()
        # Only for the first navigation: later documents (none here) would not need them.
        page.add_init_script(OPEN_PROBES.format(newest=newest, page=PAGE_SIZE))

        started = time.perf_counter()
        page.goto(f"{url}/#token={TOKEN}&c={conversation_id}")
        page.locator(newest).wait_for(state="visible", timeout=60_000)
        cold_open_driver = time.perf_counter() - started
        cold_open = probed(page, "newest", since_click=False)
        first_page = probed(page, "page", since_click=False)

        # Switch away (to the empty screen) and back through the sidebar.
        page.locator("#new-conversation").click()
        page.locator('#app[data-state="empty"]').wait_for(state="attached", timeout=60_000)
        page.evaluate("window.__clickAt = null")
        probe(page, "switch", f"() => window.__onScreen(document.querySelector('{newest}'))")
        switch_driver = timed(
            lambda: page.locator(f'.conversation-item[data-id="{conversation_id}"]').click(),
            page.locator(newest),
        )
        switch = probed(page, "switch")

        switched = versions(page, count)

        frames = scroll_frames(page, wheel_steps)

        inner = page.locator("#chat-inner")
        scroller = page.locator("#chat-scroll")
        older: list[float] = []
        for _ in range(pages_up):
            lo = inner.get_attribute("data-lo")
            if lo == "0":
                break
            started = time.perf_counter()
            scroller.evaluate("element => { element.scrollTop = 0; }")
            page.locator(f'#chat-inner:not([data-lo="{lo}"])').wait_for(
                state="attached", timeout=60_000
            )
            older.append(time.perf_counter() - started)
        dom_messages = page.locator(".message").count()
        long_tasks = page.evaluate("window.__longTasks")
        browser.close()
    frames.sort()
    return {
        "frames_over_50ms": sum(1 for f in frames if f > 0.05) / len(frames),
        "frame_p99": frames[int(len(frames) * 0.99)],
        "frame_max": frames[-1],
        "cold_open": cold_open,
        "first_page": first_page,
        "cold_open_driver": cold_open_driver,
        "switch": switch,
        "switch_driver": switch_driver,
        "older_median": statistics.median(older),
        "older_max": max(older),
        "longest_task": max(long_tasks) / 1000 if long_tasks else 0.0,
        "dom_messages": float(dom_messages),
        **switched,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--pages-up", type=int, default=30)
    parser.add_argument("--wheel-steps", type=int, default=300)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="foldline-ui-bench-") as folder:
        data_dir = Path(folder)
        (data_dir / "config.toml").write_text(CONFIG, encoding="utf-8")
        started = time.perf_counter()
        conversation_id, leaf_id = seed(data_dir, args.messages)
        print(f"seeded {args.messages:,} messages in {time.perf_counter() - started:.1f} s")
        server = start_server_in_thread(create_app(data_dir=data_dir, token=TOKEN))
        try:
            runs = [
                measure(
                    server.url,
                    conversation_id,
                    leaf_id,
                    args.messages,
                    args.pages_up,
                    args.wheel_steps,
                )
                for _ in range(args.repeat)
            ]
        finally:
            server.stop()

    print(
        f"Python {platform.python_version()}, processor {platform.processor()!r}, "
        f"machine {platform.machine()}"
    )
    print(f"{args.messages:,} messages, {args.repeat} runs (median, min, max)\n")
    print("| measurement | median | min | max |")
    print("| --- | --- | --- | --- |")
    labels = {
        "cold_open": "cold open: navigation → newest message on screen (frame)",
        "first_page": "cold open: navigation → first page of 50 drawn (frame)",
        "cold_open_driver": "cold open, as the driver sees it (polls)",
        "switch": "switch: sidebar click → newest message on screen (frame)",
        "switch_driver": "switch, as the driver sees it (polls)",
        "version_start": "version of message 2: search result click → shown (frame)",
        "version_start_meter": "version of message 2: click → meter shows its count",
        "version_back": "message 2 back to the long branch: `‹` click → drawn (frame)",
        "version_back_meter": "back to the long branch: click → meter shows its count",
        "version_end": "version of the last question: `›` click → shown (frame)",
        "version_end_meter": "version of the last question: click → meter shows its count",
        "version_start_meter_lag": "meter after the drawn switch: message 2's version",
        "version_back_meter_lag": "meter after the drawn switch: back to the long branch",
        "version_end_meter_lag": "meter after the drawn switch: the last question's version",
        "older_median": "older page: scroll to top → page drawn (median of the run)",
        "older_max": "older page: slowest of the run",
        "longest_task": "longest main-thread task of the run",
        "frame_p99": "scrolling up: 99th percentile frame",
        "frame_max": "scrolling up: longest frame",
    }
    for key, label in labels.items():
        values = [run[key] for run in runs]
        print(
            f"| {label} | {statistics.median(values) * 1000:.0f} ms "
            f"| {min(values) * 1000:.0f} ms | {max(values) * 1000:.0f} ms |"
        )
    over = [run["frames_over_50ms"] * 100 for run in runs]
    print(
        f"| scrolling up: frames over 50 ms | {statistics.median(over):.2f} % "
        f"| {min(over):.2f} % | {max(over):.2f} % |"
    )
    doms = [int(run["dom_messages"]) for run in runs]
    print(f"| message elements in the DOM after {args.pages_up} pages up | {max(doms)} | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
