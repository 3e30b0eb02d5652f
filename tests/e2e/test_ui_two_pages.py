"""Two pages on one conversation: a turn started in one appears live in the other, every
other change made in one (a pin, a fold undone or brought back, a rename, a version
switch, an edit, a hand-off, a deletion) appears in the other without focus or reload,
keeping its place, its draft and its open editor; and neither ever shows a history that
is not the stored one."""

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


# The page never hears that it got the focus back, so only what it is told live can
# change it (a re-read on focus would hide a change that was not followed).
NO_FOCUS = "window.addEventListener('focus', (event) => event.stopImmediatePropagation(), true);"


def open_second(ui, conversation_id: str) -> Page:
    second = ui.page.context.new_page()
    second.add_init_script(NO_FOCUS)
    second.on("pageerror", lambda error: ui.problems.append(f"second page: {error}"))
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
    # A hidden tab gets no focus; a stray one from the test browser would re-read it.
    page.add_init_script(NO_FOCUS)
    watch_url = f"/api/conversations/{conversation['id']}/watch"
    with page.expect_request(lambda request: request.url.endswith(watch_url)):
        ui.open(f"&c={conversation['id']}")
    # Opened and drawn before it hides: a read still under way would draw the new turn.
    expect(page.locator("#app")).to_have_attribute("data-state", "open")
    # The watch stream is given up (its request ends, aborted by the page).
    with page.expect_event("requestfailed", lambda request: request.url.endswith(watch_url)):
        page.evaluate(SET_VISIBILITY, "hidden")
    ui.app.send(conversation["id"], "sent while hidden")
    expect(page.locator(".message")).to_have_count(0)
    page.evaluate(SET_VISIBILITY, "visible")
    expect(page.locator(".message")).to_have_count(2)
    expect(page.locator(".message.user")).to_contain_text("sent while hidden")
    # Watching again: a turn from elsewhere appears live.
    ui.app.send(conversation["id"], "sent while shown")
    expect(page.locator(".message")).to_have_count(4)


LONG = "Here is a long paragraph about the design of the storage layer. " * 6

# The message at the top of the chat and how far below the view's top it starts.
PLACE = """() => {
  const view = document.getElementById('chat-scroll').getBoundingClientRect();
  const first = [...document.querySelectorAll('.message')].find(
    (m) => m.getBoundingClientRect().bottom > view.top);
  return [Number(first.dataset.index), Math.round(first.getBoundingClientRect().top - view.top)];
}"""


def message(page: Page, index: int):
    return page.locator(f'.message[data-index="{index}"]')


def shot(ui, page: Page, name: str) -> None:
    page.screenshot(path=str(ui.shot("x").parent / f"{name}.png"))


def test_pins_folds_and_renames_in_one_page_appear_live_in_the_other(ui):
    app = ui.app
    cid = app.create_conversation("Shared")["id"]
    for number in range(8):
        app.send(cid, f"Message {number}. {LONG}")
    app.api("POST", f"/api/conversations/{cid}/compact", {})
    ui.open(f"&c={cid}")
    first = ui.page
    second = open_second(ui, cid)
    expect(second.locator(".fold-line.current")).to_have_count(1)
    # B is reading further up, and has started typing.
    second.locator("#composer-input").fill("a draft in B")
    message(second, 4).scroll_into_view_if_needed()
    second.locator("#chat-scroll").evaluate("(el) => el.scrollBy(0, -30)")
    place = second.evaluate(PLACE)

    target = message(first, 4)
    target.hover()
    target.locator(".pin-button").click()
    expect(second.locator("#pinned-list .pinned-item")).to_have_count(1)
    expect(message(second, 4).locator(".pin-button")).to_have_attribute("aria-pressed", "true")

    first.locator(".fold-line.current .undo-fold").click()
    expect(second.locator(".fold-line")).to_have_count(0)
    first.locator("#notices .notice", has_text="undone").get_by_role("button", name="Redo").click()
    expect(second.locator(".fold-line.current")).to_have_count(1)

    first.locator("#conversation-title").dblclick()
    first.locator("dialog[open] input").fill("Renamed in A")
    first.locator("dialog[open] input").press("Enter")
    expect(second.locator("#conversation-title")).to_have_text("Renamed in A")
    expect(second.locator(".conversation-item.active .item-title")).to_have_text("Renamed in A")

    # B kept its place and its draft.
    expect(second.locator("#composer-input")).to_have_value("a draft in B")
    index, offset = second.evaluate(PLACE)
    assert index == place[0] and abs(offset - place[1]) <= 2, (place, index, offset)
    shot(ui, second, "two-pages-changed-elsewhere-wide")
    second.close()


def test_versions_switched_and_edits_made_in_one_page_appear_live_in_the_other(ui):
    app = ui.app
    cid = app.create_conversation("Versions")["id"]
    for text in ("Apples are red", "Pears are green", "Plums are purple"):
        app.send(cid, f"{text}. {LONG * 3}")
    answer = app.api("GET", f"/api/conversations/{cid}/messages")["items"][5]
    app.script.add(Reply(text="Purple plums are sweet."))
    app.api("POST", f"/api/conversations/{cid}/messages/{answer['id']}/regenerate", {})
    ui.open(f"&c={cid}")
    first = ui.page
    second = open_second(ui, cid)
    expect(message(second, 5)).to_contain_text("Purple plums are sweet.")
    # B is reading further up.
    message(second, 1).scroll_into_view_if_needed()
    second.locator("#chat-scroll").evaluate("(el) => el.scrollBy(0, 40)")
    place = second.evaluate(PLACE)
    assert place[0] <= 1, place

    # A shows the first answer again: so does B, where B was reading.
    message(first, 5).locator(".version-switcher").get_by_role(
        "button", name="Previous version"
    ).click()
    expect(message(second, 5)).to_contain_text("echo: Plums are purple")
    expect(message(second, 5).locator(".version-position")).to_have_text("1 / 2")
    index, offset = second.evaluate(PLACE)
    assert index == place[0] and abs(offset - place[1]) <= 2, (place, index, offset)

    # B is editing its first message; A edits the second one. B keeps its editor and
    # what it typed while A's edit runs, and shows A's version once it closes its own.
    question = message(second, 0)
    question.hover()
    question.locator(".edit-button").click()
    second.locator("textarea.edit-input").fill("B was typing this")
    # What leaves the messages as they are shows at once, the editor staying open.
    app.api("PATCH", f"/api/conversations/{cid}", {"title": "Fruit"})
    expect(second.locator("#conversation-title")).to_have_text("Fruit")
    expect(second.locator("textarea.edit-input")).to_have_value("B was typing this")
    target = message(first, 2)
    target.hover()
    target.locator(".edit-button").click()
    first.locator("textarea.edit-input").fill("Pears are yellow")
    first.locator("textarea.edit-input").press("Enter")
    expect(first.locator(".message")).to_have_count(4)
    expect(first.locator("#app")).to_have_attribute("data-busy", "")
    expect(second.locator("textarea.edit-input")).to_have_value("B was typing this")
    second.locator("textarea.edit-input").press("Escape")
    expect(second.locator(".message")).to_have_count(4)
    expect(message(second, 2)).to_contain_text("Pears are yellow")
    expect(message(second, 3)).to_contain_text("echo: Pears are yellow")

    # A regenerates the new answer: B shows the new version.
    app.script.add(Reply(text="Yellow pears are ripe."))
    answer = message(first, 3)
    answer.hover()
    answer.locator(".regenerate-button").click()
    expect(message(second, 3)).to_contain_text("Yellow pears are ripe.")
    expect(message(second, 3).locator(".version-position")).to_have_text("2 / 2")
    # B followed the turn live, or heard of it once it had ended; either way it is idle.
    expect(second.locator("#app")).not_to_have_attribute("data-busy", "turn")
    stored = stored_texts(ui, cid)
    assert [text[:20] for text in second.evaluate(TEXTS)] == [text[:20] for text in stored]
    second.close()


def test_hand_offs_deletions_and_new_conversations_appear_live_in_the_other_page(ui):
    app = ui.app
    cid = app.create_conversation("Handed off")["id"]
    app.send(cid, "Plan the trip")
    app.send(cid, "Add the museum")
    ui.open(f"&c={cid}")
    first = ui.page
    second = open_second(ui, cid)
    # B is a phone.
    second.set_viewport_size({"width": 390, "height": 844})
    expect(second.locator(".conversation-item")).to_have_count(1)

    # A conversation started elsewhere is listed in B.
    app.create_conversation("Started elsewhere")
    expect(second.locator(".conversation-item")).to_have_count(2)

    # A hands the conversation off: B says where it continues, and lists the new one.
    target = message(first, 3)
    target.hover()
    target.locator(".handoff-button").click()
    first.locator("#handoff-dialog #handoff-confirm").click()
    expect(first.locator("#handoff-origin")).to_be_visible()
    expect(second.locator("#handoff-links")).to_contain_text("Continued in")
    expect(second.locator(".conversation-item")).to_have_count(3)
    shot(ui, second, "two-pages-handed-off-elsewhere-phone")

    # A deletes the conversation B shows: B says so and leaves it.
    item = first.locator(".conversation-item").filter(
        has=first.get_by_text("Handed off", exact=True)
    )
    item.hover()
    item.locator(".delete").click()
    first.locator('dialog[open] [data-role="confirm"]').click()
    expect(second.locator("#app")).to_have_attribute("data-state", "empty")
    expect(second.locator("#notices")).to_contain_text("deleted")
    expect(second.locator(".conversation-item")).to_have_count(2)
    shot(ui, second, "two-pages-deleted-elsewhere-phone")

    # Showing no conversation, B still follows the list.
    app.create_conversation("Started after the deletion")
    expect(second.locator(".conversation-item")).to_have_count(3)
    second.close()
