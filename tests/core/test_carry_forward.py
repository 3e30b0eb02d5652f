"""The carry-forward guarantee: the person's words and details survive whatever the
summary drops, and stacked folds keep what the fold before kept."""

from __future__ import annotations

import pytest
from fold_setup import COUNTER, agent_session, run_emergency, run_fold
from strategies import ScriptedSummarizer

from foldline.core.carry_forward import (
    carry_forward,
    contains,
    normalize,
    person_details,
    stack_words,
)
from foldline.core.messages import user
from foldline.core.person_words import words_block
from foldline.core.state import SaidWords
from foldline.core.view import summary_to_message


def count(text: str) -> int:
    return max(1, len(text) // 4)


def said(*texts: str, first: int = 0) -> list[SaidWords]:
    return [SaidWords(index=first + i, text=t) for i, t in enumerate(texts)]


def test_details_are_the_sentences_that_state_something_not_chatter_or_markup() -> None:
    words = said(
        "Thanks, sounds good! Turn 10. [[reply 200]] Let's use Postgres for the store.",
        "Dana is our designer. lol ok. The cap is 4,096 rows per page.",
        "hmm nice",
    )
    assert person_details(words) == [
        "Let's use Postgres for the store.",
        "Dana is our designer.",
        "The cap is 4,096 rows per page.",
    ]


@pytest.mark.parametrize(
    ("haystack", "needle", "present"),
    [
        ("port 8080 here", "8080", True),
        ("port 80800", "8080", False),
        ("version v1.8080", "8080", False),
        ("NEVER  push to\nmain.", "never push to main.", True),
        ("see /etc/app.toml.", "/etc/app.toml", True),
        ("call load_window_2", "load_window", False),
    ],
)
def test_presence_is_verbatim_up_to_case_and_spacing(
    haystack: str, needle: str, present: bool
) -> None:
    assert contains(normalize(haystack), needle) is present


def test_the_words_follow_the_earlier_ones_and_the_counts_say_who_kept_what() -> None:
    new = said("Use port 8081 for staging. The file is /srv/a.toml.", first=5)
    result = carry_forward(
        "We agreed: Use port 8081 for staging.",
        words=stack_words(said("Never deploy on a Friday."), new, 500, count),
        earlier_details=["Never deploy on a Friday."],
        said=new,
    )
    assert [w.index for w in result.words] == [0, 5]
    assert (result.total, result.kept, result.appended, result.left_out) == (3, 1, 2, 0)
    assert result.carried == (
        "Never deploy on a Friday.",
        "Use port 8081 for staging.",
        "The file is /srv/a.toml.",
    )


def test_words_a_previous_fold_kept_are_not_repeated() -> None:
    earlier = said("Keep the cache at 64 MB.", first=3)
    assert stack_words(earlier, said("Keep the cache at 64 MB.", first=3), 500, count) == tuple(
        earlier
    )


def test_when_the_budget_binds_the_oldest_are_condensed_first_and_the_newest_stay() -> None:
    chatter = "The weather was lovely and we talked about lunch for a while today"
    words = said(*(f"{chatter}. Remember the code {1000 + i}." for i in range(30)))
    result = carry_forward(
        "nothing", words=stack_words((), words, 400, count), earlier_details=(), said=words
    )
    kept = result.words
    assert kept[-1] == words[-1]  # the newest, whole
    condensed = [w for w in kept if w.condensed]
    assert condensed and condensed[0].text == f"Remember the code {1000 + condensed[0].index}. […]"
    assert all(chatter not in w.text for w in condensed)
    assert count(words_block(kept)) <= 400
    assert result.left_out == 30 - result.appended


async def test_stacked_folds_do_not_decay_with_a_summarizer_that_keeps_nothing() -> None:
    """Each fold's summarizer keeps nothing of the person's; the first folded request is
    still in the model's view, word for word, after the third fold."""
    display = agent_session(12)
    display[0] = user("request 0: never run the migration on prod; the port is 6543")
    ignoring = ScriptedSummarizer(
        COUNTER, default=lambda r: "We worked on each request and handled the items in order."
    )
    first = (await run_fold(display, ignoring)).state
    assert first is not None and first.strategy == "free-form"
    state = first
    for more in range(2):
        display += agent_session(6, first=100 + 10 * more)
        state = (await run_fold(display, ignoring, state=state)).state
        assert state is not None
    assert state.version == 3
    seen = summary_to_message(state).text
    assert "request 0: never run the migration on prod; the port is 6543" in seen
    assert "never run the migration on prod" not in state.summary_message
    assert state.details_total >= len(first.carried_details) > 0
    assert set(first.carried_details) <= set(state.carried_details)
    assert state.person_words[: len(first.person_words)] == first.person_words


def test_a_digest_keeps_the_words_of_the_fold_it_stacks_on() -> None:
    display = agent_session(12)
    earlier = said("Never deploy on a Friday.", "The key is /srv/keys/deploy.pem")
    base = run_emergency(display[:8])
    assert base is not None
    stacked = base.model_copy(
        update={"person_words": earlier, "carried_details": ("Never deploy on a Friday.",)}
    )
    digest = run_emergency(display, stacked)
    assert digest is not None and digest.degraded
    assert digest.person_words[:2] == tuple(earlier)
    seen = summary_to_message(digest).text
    assert "Never deploy on a Friday." in seen and "/srv/keys/deploy.pem" in seen
    assert "Never deploy on a Friday." in digest.carried_details


def test_a_fold_from_before_the_words_were_kept_hands_its_details_on() -> None:
    display = agent_session(12)
    base = run_emergency(display[:8])
    assert base is not None
    legacy = base.model_copy(
        update={"person_words": (), "carried_details": ("8080", "Never deploy on a Friday.")}
    )
    stacked = run_emergency(display, legacy)
    assert stacked is not None
    first = stacked.person_words[0]
    assert first.condensed and first.text == "- 8080\n- Never deploy on a Friday."
    assert "Never deploy on a Friday." in stacked.carried_details
