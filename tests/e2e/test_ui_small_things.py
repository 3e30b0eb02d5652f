"""Small things that broke trust: a negative "saving", a percentage past 100, a warning
that came four turns early, a status pointing at a missing button, keyboard focus lost
after Regenerate."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from foldline.testing import Reply

TWO_MODELS = """\
[defaults]
model = "fake-model"

[providers.fake]
kind = "openai-compatible"
base_url = "{base_url}"

[models."fake-model"]
provider = "fake"
context_window = 4000
max_output_tokens = 500

[models."tiny-model"]
provider = "fake"
context_window = 700
max_output_tokens = 100

[compaction]
auto_title = false
"""


def test_cache_writes_are_a_cost_not_a_negative_saving(ui):
    ui.open()
    usage = {
        "priced": True,
        "total": {
            "calls": 1,
            "cost": 0.02,
            "saved": -0.0008,
            "inputTokens": 10,
            "cacheReadTokens": 0,
            "cacheCreationTokens": 4000,
            "outputTokens": 20,
        },
        "lastTurn": {
            "calls": 1,
            "cost": 0.02,
            "saved": -0.0008,
            "inputTokens": 10,
            "cacheReadTokens": 0,
            "cacheCreationTokens": 4000,
            "outputTokens": 20,
        },
    }
    text = ui.page.evaluate(
        """async (usage) => {
          const { costContent } = await import('./js/meter.js');
          const box = document.createElement('div');
          box.append(...costContent(usage));
          return box.innerText;
        }""",
        usage,
    )
    assert "-" not in text.replace("Cache writes", ""), text
    assert "Cache writes cost$0.0008" in text, text


def test_the_warning_comes_a_turn_or_two_before_the_fold(ui):
    ui.open()
    levels = ui.page.evaluate(
        """async () => {
          const { meterLevel } = await import('./js/meter.js');
          // Threshold 80%; each turn adds 2.5%: at 70% the fold is four turns away.
          return [0.7, 0.76, 0.81].map((f) => meterLevel(f, 0.8, 0.025));
        }"""
    )
    assert levels == ["ok", "warn", "danger"]


def test_a_conversation_over_the_window_says_what_happens_next(
    start_foldline, make_ui, fake_provider
):
    app = start_foldline(TWO_MODELS.format(base_url=fake_provider.openai_url))
    conversation = app.create_conversation("Big")
    app.send(conversation["id"], "Here is a long paragraph about storage. " * 60)
    app.api("PATCH", f"/api/conversations/{conversation['id']}", {"model": "tiny-model"})
    ui = make_ui(app)
    ui.open(f"&c={conversation['id']}")
    warning = ui.page.locator(".auto-fold-warning")
    expect(warning).to_contain_text("no longer fits this model's budget: it folds before")
    expect(warning).not_to_contain_text("%")


def test_an_interrupted_answer_that_is_not_last_names_no_missing_button(ui):
    ui.open()
    page = ui.page
    ui.app.script.add(
        Reply(text="".join(f"word{i} " for i in range(200)), chunk_chars=8, delay=0.05)
    )
    page.locator("#composer-input").fill("Write a long answer")
    page.locator("#composer-input").press("Enter")
    expect(page.locator(".message.assistant.streaming")).to_contain_text("word5 ")
    page.locator("#stop-button").click()
    ui.idle()
    first = page.locator('.message.assistant[data-status="interrupted"]')
    expect(first.locator(".status-text")).to_contain_text("Continue finishes it here")
    ui.send("Something else")
    expect(first.locator(".retry-button")).to_have_count(0)
    expect(first.locator(".status-text")).not_to_contain_text("Continue")


def test_focus_stays_on_regenerate_after_it_ran(ui):
    ui.open()
    page = ui.page
    ui.send("Hello")
    answer = page.locator('.message.assistant[data-index="1"]')
    answer.hover()
    answer.locator(".regenerate-button").focus()
    page.keyboard.press("Enter")
    ui.idle()
    expect(page.locator('.message.assistant[data-index="1"]')).to_have_attribute(
        "data-versions", "2"
    )
    # The new version's own Regenerate button has the focus (not the page).
    expect(page.locator('.message.assistant[data-index="1"] .regenerate-button')).to_be_focused()


def test_a_turn_says_what_it_waits_for_until_the_first_words(ui):
    ui.open()
    page = ui.page
    # The model takes a while to start (a cold provider client, a busy server).
    ui.app.script.add(Reply(text="Finally here.", chunk_chars=100, delay=2.0))
    page.locator("#composer-input").fill("Hello?")
    page.locator("#composer-input").press("Enter")
    banner = page.locator("#composer-status .progress-banner")
    expect(banner).to_contain_text("Waiting for fake-model to start answering")
    expect(page.locator(".message.assistant")).to_contain_text("Finally here.")
    expect(banner).to_have_count(0)


def test_the_sidebar_count_says_other_versions_exist(ui):
    app = ui.app
    cid = app.create_conversation("Edited")["id"]
    app.send(cid, "first try")
    app.send(cid, "second")
    first = app.api("GET", f"/api/conversations/{cid}/messages?limit=1")["items"][0]
    app.api("POST", f"/api/conversations/{cid}/messages/{first['id']}/edit", {"content": "again"})
    ui.open(f"&c={cid}")
    meta = ui.page.locator(f'.conversation-item[data-id="{cid}"] .item-meta')
    expect(meta).to_contain_text("2 messages (other versions too)")


def test_a_continued_answer_counts_the_tokens_of_every_part(ui):
    """Stopped mid-answer, then continued: the answer's footer counts what was written
    before the stop too (the provider reports no usage for a stopped call, so those are
    counted, and marked ≈), live and after a reload."""
    full = "".join(f"word{i} " for i in range(300))
    ui.app.script.add(Reply(text=full, chunk_chars=6, delay=0.05))
    ui.open()
    page = ui.page
    page.locator("#composer-input").fill("Write a lot")
    page.locator("#composer-input").press("Enter")
    expect(page.locator(".message.assistant.streaming")).to_contain_text("word30 ")
    page.locator("#stop-button").click()
    ui.idle()
    answer = page.locator(".message.assistant")
    words_before = len(answer.locator(".content").inner_text().split())
    stopped = answer.locator(".message-meta .usage-text")
    expect(stopped).to_have_text(re.compile(r"^≈\d+ tokens out$"))
    counted = int(stopped.inner_text().strip("≈").split()[0])
    assert counted >= words_before

    ui.app.script.add(Reply(text=" and the rest." * 20))
    answer.locator(".retry-button").click()
    ui.idle()
    expect(answer.locator(".continued-mark")).to_have_text("continued")
    conversation = ui.app.api("GET", "/api/conversations")["items"][0]["id"]
    # Two calls: the stopped one, counted (the provider bills it all the same), and the
    # continuation, as reported.
    usage = ui.app.api("GET", f"/api/conversations/{conversation}/context")["usage"]
    assert (usage["total"]["calls"], usage["total"]["estimatedCalls"]) == (2, 1)
    whole_tokens = usage["total"]["outputTokens"]
    assert whole_tokens > counted
    whole = f"≈{whole_tokens} tokens out"
    expect(answer.locator(".usage-text")).to_have_text(whole)
    answer.hover()
    ui.shot("continued-answer-tokens")
    page.reload()
    expect(page.locator(".message.assistant .usage-text")).to_have_text(whole)
    # The meter's usage says its sums hold a counted call.
    page.locator("#meter").hover()
    popover = page.locator("#meter-popover")
    expect(popover.locator(".cost-total")).to_contain_text("≈")
    expect(popover.locator(".cost-estimated")).to_contain_text("One answer was stopped")
    expect(popover).to_have_css("opacity", "1")  # faded in, for the screenshot
    ui.shot("meter-usage-estimated")


LONG = "Here is a long paragraph about the design of the storage layer. " * 6


def test_on_a_phone_pins_hand_offs_and_the_warning_leave_the_chat_most_of_the_screen(ui):
    """A conversation continued from another, with two pins, handed off twice (once after
    a version switch) and close to its fold: at 390 × 844 the bars around the chat take
    a line each, and the two hand-offs are told apart."""
    app = ui.app
    origin = app.create_conversation("Trip planning: Lisbon in May")["id"]
    app.send(origin, "Two rules: vegetarian, no flights before 9 am.")
    cid = app.api("POST", f"/api/conversations/{origin}/handoff", {})["id"]
    for step in range(7):
        app.send(cid, f"Step {step}. {LONG}")
    items = app.api("GET", f"/api/conversations/{cid}/messages?limit=100")["items"]
    for pinned in (items[0], items[2]):
        app.api("POST", f"/api/conversations/{cid}/messages/{pinned['id']}/pin")
    app.api("POST", f"/api/conversations/{cid}/handoff", {})
    app.script.add(Reply(text="Another version."))
    app.api("POST", f"/api/conversations/{cid}/messages/{items[-1]['id']}/regenerate", {})
    app.api("PUT", f"/api/conversations/{cid}/active-leaf", {"messageId": items[-1]["id"]})
    app.api("POST", f"/api/conversations/{cid}/handoff", {})

    page = ui.page
    height = 844
    page.set_viewport_size({"width": 390, "height": height})
    ui.open(f"&c={cid}")
    # The warning, whichever of its two sentences the meter's level gives.
    expect(page.locator("#composer-status")).to_contain_text(
        re.compile(r"folds (automatically|before the next answer|when a message takes it past)")
    )
    links = page.locator("#handoff-links .handoff-link")
    expect(links).to_have_count(2)
    assert links.nth(0).inner_text() != links.nth(1).inner_text()
    bars = sum(
        page.locator(selector).bounding_box()["height"]
        for selector in ("#handoff-origin", "#pinned-list", "#handoff-links", "#composer-status")
    )
    assert bars <= 0.2 * height, bars
    ui.shot("phone-bars")

    # Everything folded away is a tap away.
    expect(links.nth(0)).to_be_hidden()
    page.locator("#handoff-links .handoff-more").click()
    expect(links.nth(0)).to_be_visible()
    expect(page.locator("#pinned-list .pinned-item").first).to_be_hidden()
    page.locator("#pinned-list .pinned-toggle").click()
    expect(page.locator("#pinned-list .pinned-item")).to_have_count(2)
    expect(page.locator("#pinned-list .pinned-item").first).to_be_visible()
    ui.shot("phone-bars-expanded")
