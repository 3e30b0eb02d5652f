"""Two pages on one conversation: a turn started in one appears live in the other, and
neither ever shows a history that is not the stored one."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from foldline.testing import Reply

# The texts of the messages on screen, in order.
TEXTS = """() => [...document.querySelectorAll('.message')].map(
  (m) => m.querySelector('.bubble, .md')?.innerText.trim() ?? '')"""


def stored_texts(ui, conversation_id: str) -> list[str]:
    page = ui.app.api("GET", f"/api/conversations/{conversation_id}/messages?limit=100")
    return [
        " ".join(part["text"] for part in message["parts"] if part["kind"] == "text").strip()
        for message in page["items"]
    ]


def open_second(ui, conversation_id: str) -> Page:
    second = ui.page.context.new_page()
    second.goto(f"{ui.app.url}/#token={ui.app.token}&c={conversation_id}")
    expect(second.locator("#app")).not_to_have_attribute("data-state", "loading")
    return second


def send_on(page: Page, text: str) -> None:
    page.locator("#composer-input").fill(text)
    page.locator("#composer-input").press("Enter")
    expect(page.locator("#app")).to_have_attribute("data-busy", "", timeout=30_000)


def test_a_turn_sent_in_one_page_appears_live_in_the_other(ui):
    conversation = ui.app.create_conversation("Shared")
    ui.app.send(conversation["id"], "first question")
    ui.open(f"&c={conversation['id']}")
    first = ui.page
    second = open_second(ui, conversation["id"])
    expect(second.locator(".message")).to_have_count(2)

    # A sends a slow answer: B shows it while it is written, then complete.
    ui.app.script.add(
        Reply(text="".join(f"part{i} " for i in range(40)), chunk_chars=6, delay=0.05)
    )
    send_on(first, "question from A")
    expect(second.locator(".message.user").last).to_contain_text("question from A")
    expect(second.locator(".message.assistant").last).to_contain_text("part39")
    expect(second.locator("#app")).to_have_attribute("data-busy", "")

    # B sends next: both pages end with exactly the stored history, in order.
    send_on(second, "question from B")
    expect(first.locator(".message")).to_have_count(6)
    expect(second.locator(".message")).to_have_count(6)
    stored = stored_texts(ui, conversation["id"])
    assert len(stored) == 6
    for page in (first, second):
        shown = page.evaluate(TEXTS)
        assert [text[:30] for text in shown] == [text[:30] for text in stored], shown
    second.close()


def test_a_stale_page_shows_the_stored_history_after_it_sends(ui):
    """A page that missed a turn (its stream was not open) still never shows a history
    that is not the stored one once it sends."""
    conversation = ui.app.create_conversation("Stale")
    ui.open(f"&c={conversation['id']}")
    page = ui.page
    # Another client sends while this page is blocked from hearing about it.
    page.route("**/watch", lambda route: route.abort())
    page.reload()
    expect(page.locator("#app")).not_to_have_attribute("data-state", "loading")
    ui.app.send(conversation["id"], "sent elsewhere")
    send_on(page, "sent here")
    expect(page.locator(".message")).to_have_count(4)
    stored = stored_texts(ui, conversation["id"])
    shown = page.evaluate(TEXTS)
    assert [text[:20] for text in shown] == [text[:20] for text in stored], shown
    ui.allow("ERR_FAILED")


SET_VISIBILITY = """(state) => {
  Object.defineProperty(document, 'visibilityState', { value: state, configurable: true });
  document.dispatchEvent(new Event('visibilitychange'));
}"""


def test_a_hidden_tab_lets_go_of_its_stream_and_catches_up_when_shown(ui):
    conversation = ui.app.create_conversation("Background tab")
    page = ui.page
    with page.expect_request(lambda request: request.url.endswith("/watch")):
        ui.open(f"&c={conversation['id']}")
    # The watch stream is given up (its request ends, aborted by the page).
    with page.expect_event("requestfailed", lambda request: request.url.endswith("/watch")):
        page.evaluate(SET_VISIBILITY, "hidden")
    ui.app.send(conversation["id"], "sent while hidden")
    expect(page.locator(".message")).to_have_count(0)
    page.evaluate(SET_VISIBILITY, "visible")
    expect(page.locator(".message")).to_have_count(2)
    expect(page.locator(".message.user")).to_contain_text("sent while hidden")
    # Watching again: a turn from elsewhere appears live.
    ui.app.send(conversation["id"], "sent while shown")
    expect(page.locator(".message")).to_have_count(4)
