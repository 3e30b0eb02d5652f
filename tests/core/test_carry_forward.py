"""The carry-forward guarantee: the person's details survive whatever the summary drops."""

from __future__ import annotations

import pytest
from fold_setup import COUNTER, agent_session, run_emergency, run_fold
from strategies import ScriptedSummarizer

from foldline.core.carry_forward import (
    CARRY_HEADING,
    carry_forward,
    contains,
    details_in_text,
    normalize,
    person_details,
)
from foldline.core.messages import Message, assistant, user


def count(text: str) -> int:
    return max(1, len(text) // 4)


def test_every_kind_of_detail_is_extracted_verbatim() -> None:
    text = (
        "Please use port 8080 and never push to main. The config is at /etc/app/main.toml, "
        "docs at https://example.com/a?b=1. The loader `load_window` calls parseConfig with "
        '3.5GB free for "Project Falcon". I will do step 2. Use the SNAKE_CASE_ENV variable.'
    )
    found = details_in_text(text)
    assert found[0] == "Please use port 8080 and never push to main."  # instructions first
    for item in (
        "/etc/app/main.toml",
        "https://example.com/a?b=1",
        "load_window",
        "parseConfig",
        "3.5GB",
        "Project Falcon",
        "Use the SNAKE_CASE_ENV variable.",
    ):
        assert item in found, item
    # Parts of a carried sentence are not counted twice; single digits are noise.
    assert "8080" not in found and "SNAKE_CASE_ENV" not in found
    assert "2" not in found
    assert details_in_text("just some chat about the weather") == []


def test_only_the_persons_messages_count() -> None:
    messages: list[Message] = [
        user("Keep the limit at 4096 tokens."),
        assistant("I will use /tmp/assistant/path and port 9999."),
        user("The key is at /srv/key.pem."),
    ]
    groups = person_details(messages)
    assert groups == [["Keep the limit at 4096 tokens."], ["/srv/key.pem"]]


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


def test_missing_details_are_appended_and_counted() -> None:
    folded = [user("Use port 8081 for staging. The file is /srv/a.toml.")]
    result = carry_forward(
        "We talked about the file /srv/a.toml.",
        earlier=["Never deploy on a Friday."],
        folded=folded,
        cap_tokens=500,
        count_text=count,
    )
    assert (result.total, result.kept, result.appended, result.left_out) == (3, 1, 2, 0)
    assert result.summary.startswith("We talked about the file /srv/a.toml.")
    assert result.section.startswith(f"\n\n{CARRY_HEADING}\n")
    assert "- Never deploy on a Friday.\n- Use port 8081 for staging." in result.section
    assert result.carried == (
        "Never deploy on a Friday.",
        "Use port 8081 for staging.",
        "/srv/a.toml",
    )


def test_nothing_is_appended_when_the_summary_kept_everything() -> None:
    result = carry_forward(
        "Use port 8081 for staging.",
        earlier=(),
        folded=[user("Use port 8081 for staging.")],
        cap_tokens=500,
        count_text=count,
    )
    assert result.section == "" and result.summary == "Use port 8081 for staging."
    assert (result.kept, result.appended) == (1, 0)


def test_when_the_cap_binds_the_newest_details_go_first() -> None:
    folded = [user(f"Remember the code {1000 + i}.") for i in range(30)]
    result = carry_forward("nothing", earlier=(), folded=folded, cap_tokens=60, count_text=count)
    assert 0 < result.appended < 30 and result.left_out == 30 - result.appended
    assert "Remember the code 1029." in result.section  # the newest
    assert "Remember the code 1000." not in result.section
    assert count(result.section) <= 60


async def test_stacked_folds_do_not_decay_with_a_format_ignoring_summarizer() -> None:
    """Each fold's summarizer keeps nothing of the person's; the details of the first
    folded turns are still carried by the third fold."""
    display = agent_session(12)
    display[0] = user("request 0: never run the migration on prod; the port is 6543")
    ignoring = ScriptedSummarizer(COUNTER, default=lambda r: "We worked on several items.")
    first = (await run_fold(display, ignoring)).state
    assert first is not None and first.strategy == "free-form"
    assert "never run the migration on prod" in first.summary_message
    state = first
    for more in range(2):
        display += agent_session(6, first=100 + 10 * more)
        state = (await run_fold(display, ignoring, state=state)).state
        assert state is not None
    assert state.version == 3
    assert "request 0: never run the migration on prod; the port is 6543" in (state.summary_message)
    assert state.details_total >= len(first.carried_details)
    assert set(first.carried_details) <= set(state.carried_details)


def test_a_digest_keeps_the_carried_details_of_the_fold_it_stacks_on() -> None:
    display = agent_session(12)
    earlier = ("Never deploy on a Friday.", "/srv/keys/deploy.pem")
    base = run_emergency(display[:8])
    assert base is not None
    stacked = base.model_copy(update={"carried_details": earlier})
    digest = run_emergency(display, stacked)
    assert digest is not None and digest.degraded
    for item in earlier:
        assert item in digest.summary_message
        assert item in digest.carried_details
