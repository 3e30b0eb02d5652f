"""Untrusted content runs nothing: model replies, summaries, tool output and titles.

These pages are opened with the Content-Security-Policy *bypassed*, so the sanitizer is
the only thing between a payload and its execution; a control payload injected without
the sanitizer proves that the payloads would run in this page if they reached the DOM.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from foldline.testing import Reply, call, tool_step

PAYLOAD = """Here are some tricks:

<img src=x onerror="window.__xss = 'img'">
<img src="data:image/png;base64,broken" onerror="window.__xss = 'data-img'">
<script>window.__xss = 'script'</script>
<svg onload="window.__xss = 'svg'"><circle r="4"></circle></svg>
<iframe srcdoc="<script>parent.__xss = 'iframe'</script>"></iframe>
<div onclick="window.__xss = 'click'" style="position:fixed;inset:0">click me</div>
<a href="javascript:window.__xss='link'">a link</a> and [another](javascript:window.__xss='md')
<form action="javascript:window.__xss='form'"><button>go</button></form>
<object data="javascript:window.__xss='object'"></object>
"""

FLAGS = "() => [window.__xss, window.__control]"

# Resolves once every image of untrusted content has loaded or failed, and the events
# that follow (where a kept `onload` / `onerror` would run) have been dispatched.
MEDIA_SETTLED = """async () => {
  const images = [...document.querySelectorAll('.md img, .fold-summary img, .tool-card img')];
  await Promise.all(images.filter((img) => !img.complete).map((img) => new Promise((done) => {
    img.addEventListener('load', done, { once: true });
    img.addEventListener('error', done, { once: true });
  })));
  await new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
  return images.length;
}"""


@pytest.fixture
def unsafe_page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    yield page
    context.close()


def open_app(page: Page, app) -> None:
    page.goto(f"{app.url}/#token={app.token}")
    expect(page.locator("#app")).not_to_have_attribute("data-state", "loading")


def assert_nothing_ran(page: Page) -> None:
    assert page.evaluate("() => window.__xss === undefined"), page.evaluate(FLAGS)
    dangerous = page.evaluate(
        """() => [...document.querySelectorAll('.md *, .fold-summary *, .tool-card *')]
            .filter(e => ['SCRIPT', 'IFRAME', 'OBJECT', 'FORM', 'EMBED'].includes(e.tagName)
                || [...e.attributes].some(a => a.name.startsWith('on') || a.name === 'style'
                    || /^\\s*javascript:/i.test(a.value)))
            .map(e => e.outerHTML)"""
    )
    assert dangerous == []


def test_the_control_payload_would_run_without_the_sanitizer(unsafe_page, foldline):
    open_app(unsafe_page, foldline)
    unsafe_page.evaluate(
        """() => { const d = document.createElement('div');
            d.innerHTML = '<img src="data:image/png;base64,broken" onerror="window.__control = 1">';
            document.body.append(d); }"""
    )
    unsafe_page.wait_for_function("() => window.__control === 1")


def test_a_reply_with_html_and_script_runs_nothing(unsafe_page, foldline):
    foldline.script.add(Reply(text=PAYLOAD))
    open_app(unsafe_page, foldline)
    box = unsafe_page.locator("#composer-input")
    box.fill("Show me tricks")
    box.press("Enter")
    answer = unsafe_page.locator(".message.assistant")
    expect(answer).to_contain_text("Here are some tricks")
    expect(unsafe_page.locator("#app")).to_have_attribute("data-busy", "")
    assert unsafe_page.evaluate(MEDIA_SETTLED) == 1  # the data: image (`src=x` is dropped)
    # Clicking what is left of the payload runs nothing either.
    answer.get_by_text("click me").click()
    answer.get_by_text("a link").click()
    answer.get_by_text("another").click()
    assert_nothing_ran(unsafe_page)
    # The text survives; only the active parts were removed.
    expect(answer).to_contain_text("a link")
    expect(answer.locator("img")).to_have_count(1)  # the data: image, without its handler


def test_summary_tool_output_and_title_run_nothing(unsafe_page, foldline):
    conversation = foldline.create_conversation("<img src=x onerror=\"window.__xss='title'\">")
    foldline.script.add(
        tool_step(call("getContextStats", {})),
        Reply(text="done"),
    )
    foldline.send(conversation["id"], "Check the context please")
    # The summarizer quotes the user's last request verbatim: put the payload there, fold,
    # and show the summary.
    for number in range(3):
        foldline.send(conversation["id"], f"Request {number}: {PAYLOAD}")
    stream = foldline.api("POST", f"/api/conversations/{conversation['id']}/compact", {})
    assert "compaction.completed" in stream

    open_app(unsafe_page, foldline)
    unsafe_page.locator(".conversation-item").first.click()
    expect(unsafe_page.locator("#conversation-title")).to_have_text(conversation["title"])
    line = unsafe_page.locator(".fold-line.current")
    line.locator(".show-summary").click()
    expect(line.locator(".fold-summary")).to_contain_text("Here are some tricks")
    unsafe_page.locator(".page-edge.top").scroll_into_view_if_needed()
    card = unsafe_page.locator(".tool-card").first
    expect(card).to_be_visible()
    card.locator("summary").click()
    unsafe_page.evaluate(MEDIA_SETTLED)
    assert_nothing_ran(unsafe_page)
