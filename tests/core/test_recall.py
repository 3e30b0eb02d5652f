"""The pure half of recall: queries, excerpts, hit lines, caps, the summary's sentence."""

from __future__ import annotations

import re

import pytest

from foldline.core.messages import (
    AttachmentPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    assistant,
    tool_results,
    user,
)
from foldline.core.pruning import plan_prune
from foldline.core.recall import (
    MAX_QUERY_CHARS,
    MAX_TERMS,
    Hit,
    ReadMessage,
    RecallError,
    RecallScope,
    check_range,
    excerpt,
    expanded_terms,
    fts_match,
    hit_line,
    message_text,
    offered_tools,
    others_scope,
    query_terms,
    read_result,
    recall_note,
    result_cap,
    search_result,
    sentences,
)
from foldline.core.settings import CompactionSettings
from foldline.core.state import CompactionState, SummarizedRange


def count(text: str) -> int:
    """A stand-in counter: one token per four characters."""
    return (len(text) + 3) // 4


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("When did we pick PostgreSQL?", ["pick", "postgresql"]),
        ("What did Ana look into last spring?", ["ana", "look", "last", "spring"]),
        ("What is my sister's name?", ["sister", "name"]),
        ("database choice database", ["database", "choice"]),
        # FTS operators are words like any other: lowercased, never syntax.
        ('NEAR(garden bees) AND "unclosed OR -x:y *', ["near", "garden", "bees", "unclosed"]),
    ],
)
def test_query_terms_keep_the_subject(query: str, terms: list[str]) -> None:
    assert query_terms(query) == terms


@pytest.mark.parametrize("query", ["", "   ", "what did you say?", "?!* -- :"])
def test_a_query_without_a_subject_is_a_tool_error(query: str) -> None:
    with pytest.raises(RecallError, match="no word to search for"):
        query_terms(query)


def test_a_query_of_ten_thousand_characters_is_refused_by_size() -> None:
    with pytest.raises(RecallError, match="10,000 characters"):
        query_terms("garden " * 1428 + "abcd")
    assert query_terms("garden " * (MAX_QUERY_CHARS // 7))  # at the limit it works


def test_terms_are_capped() -> None:
    assert len(query_terms(" ".join(f"word{i}" for i in range(100)))) == MAX_TERMS


@pytest.mark.parametrize(
    ("terms", "expected"),
    [
        (["boss"], ["boss", "manager", "supervisor"]),
        (["kids", "school"], ["kids", "school", "children", "child", "kid", "toddler"]),
    ],
)
def test_synonyms_expand_the_terms(terms: list[str], expected: list[str]) -> None:
    got = expanded_terms(terms)
    assert got[: len(terms)] == terms
    assert set(expected) <= set(got)
    assert expanded_terms(terms, synonyms=False) == terms


def test_fts_match_quotes_every_term_and_ors_them() -> None:
    assert fts_match(["a", 'b"c', "near"]) == '"a" OR "b""c" OR "near"'


def test_sentences_split_on_ends_and_lines() -> None:
    assert sentences("One. Two! Three?\nFour… five") == ["One.", "Two!", "Three?", "Four…", "five"]


def test_excerpt_keeps_the_matching_sentence_whole() -> None:
    text = (
        "The weather was awful. Been reading up on community gardens lately, always "
        "wanted one. The trains were late again. " + "Filler sentence here. " * 40
    )
    got = excerpt(text, ["garden"], width=120)
    assert "Been reading up on community gardens lately, always wanted one." in got
    assert got.endswith("…")
    assert len(got) <= 130


def test_excerpt_picks_the_sentence_with_most_terms() -> None:
    text = "We like the garden. The allotment garden near the station had beekeeping too."
    got = excerpt(text, ["garden", "beekeeping"], width=60)
    assert got.startswith("… The allotment garden")


def test_a_sentence_longer_than_the_width_is_cut_around_the_match() -> None:
    text = "word " * 200 + "community gardens " + "word " * 200
    got = excerpt(text, ["gardens"], width=100)
    assert "community gardens" in got and got.startswith("…") and got.endswith("…")
    assert len(got) <= 102


def test_message_text_holds_everything_but_reasoning() -> None:
    message = Message(
        role="assistant",
        parts=(
            ReasoningPart(text="secret thinking"),
            TextPart(text="Looking."),
            ToolCallPart(id="c1", name="read_file", input={"path": "notes.txt"}),
        ),
    )
    assert "secret" not in message_text(message)
    assert '[called read_file {"path": "notes.txt"}]' in message_text(message)
    result = Message(
        role="tool",
        parts=(
            ToolResultPart(
                call_id="c1",
                name="read_file",
                output="cut…",
                full_output="the whole output",
                compacted_at="2025-01-01T00:00:00Z",
            ),
            AttachmentPart(
                name="a.txt", media_type="text/plain", sha256="0" * 64, size=3, text="file words"
            ),
        ),
    )
    text = message_text(result)
    assert "the whole output" in text and "cut…" not in text  # full, even when pruned
    assert "[file a.txt]\nfile words" in text


def test_hit_lines_begin_with_the_number() -> None:
    hit = Hit(12, "user", "2025-03-14T18:02:11Z", "We picked PostgreSQL. It was late.")
    line = hit_line(hit, ["postgresql"])
    assert line == "#12 person, 2025-03-14 18:02: We picked PostgreSQL. It was late."
    seen = hit_line(Hit(40, "assistant", "2025-03-14T18:02:11Z", "ok", in_view=True), ["ok"])
    assert seen.startswith("#40 assistant, 2025-03-14 18:02, in your view: ")
    other = hit_line(
        Hit(3, "user", "2025-01-02T08:00:00Z", "x", conversation_id="c9", title='Say "hi"'),
        ["x"],
    )
    assert other.startswith("#3 in conversation c9 \"Say 'hi'\", person, 2025-01-02 08:00: ")


def test_search_result_fits_the_cap_and_says_how_many_more() -> None:
    hits = [Hit(i, "user", "2025-01-01T00:00:00Z", f"Garden note {i}. " * 5) for i in range(30)]
    out = search_result(hits, 45, ["garden"], cap_tokens=300, count=count)
    lines = out.splitlines()
    assert lines[0] == "45 messages in this conversation match, best first:"
    assert count(out) <= 300
    shown = [line for line in lines if re.match(r"#\d+ ", line)]
    assert 0 < len(shown) < 30
    assert lines[-1].startswith(f"({45 - len(shown)} more not shown")


def test_search_result_without_hits_names_the_terms() -> None:
    assert "garden, bees" in search_result([], 0, ["garden", "bees"], 500, count)


def test_read_result_continues_where_it_stopped() -> None:
    reads = [
        ReadMessage(
            i,
            "user" if i % 2 == 0 else "assistant",
            "2025-01-01T10:00:00Z",
            Message(role="user", parts=(TextPart(text=f"message {i} " * 20),)),
        )
        for i in range(10, 20)
    ]
    out = read_result(reads, 19, cap_tokens=200, count=count, start_in_view=18)
    assert out.startswith("#10 person, 2025-01-01 10:00:\nmessage 10")
    assert count(out) <= 200
    stopped = re.search(r"fromIndex=(\d+), toIndex=19", out)
    assert stopped is not None
    shown = re.findall(r"^#(\d+) ", out, re.MULTILINE)
    assert int(stopped.group(1)) == int(shown[-1]) + 1
    whole = read_result(reads, 19, cap_tokens=10_000, count=count, start_in_view=18)
    assert "fromIndex" not in whole
    assert "#18 person, 2025-01-01 10:00, in your view:" in whole


def test_a_message_larger_than_the_cap_is_cut_saying_so() -> None:
    big = ReadMessage(
        5, "tool", "2025-01-01T10:00:00Z", Message(role="user", parts=(TextPart(text="x " * 5000),))
    )
    out = read_result([big], 7, cap_tokens=300, count=count)
    assert out.startswith("#5 tool, ")
    assert "longer than a recall result may be" in out
    assert "fromIndex=6" in out
    assert count(out) <= 300


@pytest.mark.parametrize(
    ("from_index", "to_index", "error"),
    [
        ("3", 4, "fromIndex must be an integer"),
        (3, None, "toIndex must be an integer"),
        (True, 4, "fromIndex must be an integer"),
        (-1, 4, "out of range: messages are #0 to #9"),
        (10, 12, "out of range"),
        (5, 4, "before fromIndex"),
    ],
)
def test_check_range_errors(from_index: object, to_index: object, error: str) -> None:
    with pytest.raises(RecallError, match=error):
        check_range(from_index, to_index, 10)


def test_check_range_clamps_the_end() -> None:
    assert check_range(2, 500, 10) == (2, 9)


@pytest.mark.parametrize(
    ("cap", "budget", "tokens", "truncation", "expected"),
    [
        (2000, 100_000, 10_000, 4000, 2000),  # the setting
        (2000, 6_000, 1_000, 4000, 1500),  # a quarter of a small budget
        (2000, 100_000, 97_000, 4000, 1500),  # half of what is left
        (2000, 100_000, 10_000, 1200, 1200),  # never cut by ingest truncation
        (2000, None, 10_000, 4000, 2000),  # an unlimited window
        (2000, 6_000, 7_000, 4000, 0),  # over the budget already
    ],
)
def test_result_cap(
    cap: int, budget: int | None, tokens: int, truncation: int, expected: int
) -> None:
    assert result_cap(cap, budget, tokens, truncation) == expected


def _state(start: int, trigger: str = "auto") -> CompactionState:
    return CompactionState(
        version=2,
        compacted_at="2025-01-01T00:00:00Z",
        summary_message="s",
        api_start_index=start,
        summarized_range=SummarizedRange(from_index=0, to_index=start, message_count=start),
        strategy="structured",
        trigger=trigger,  # type: ignore[arg-type]
        tokens_before=1,
        tokens_after=1,
    )


def test_recall_note_names_the_folded_range() -> None:
    assert recall_note(_state(42)) == (
        "Messages #0-#41 are folded: searchHistory and readHistory return them verbatim."
    )
    assert recall_note(_state(0, "handoff")) == ""


def test_recall_tools_are_offered_from_the_first_fold() -> None:
    specs = [
        ToolSpec(name=n, description="d", input_schema={})
        for n in ("getContextStats", "searchHistory", "readHistory", "searchConversations", "x")
    ]
    assert [s.name for s in offered_tools(specs, folded=False)] == ["getContextStats", "x"]
    assert offered_tools(specs, folded=True) == specs


@pytest.mark.parametrize(
    ("setting", "project", "allowed"),
    [
        ("off", "p1", False),
        ("off", None, False),
        ("project", "p1", True),
        ("project", None, False),
        ("all", None, True),
        ("all", "p1", True),
    ],
)
def test_others_scope(setting: str, project: str | None, allowed: bool) -> None:
    scope = RecallScope(0, 1000, setting, project, count)  # type: ignore[arg-type]
    assert (others_scope(scope) is None) == allowed


def test_recall_results_are_pruned_like_any_tool_output() -> None:
    display: list[Message] = []
    for n in range(6):
        display += [
            user(f"question {n}"),
            assistant("", ToolCallPart(id=f"s{n}", name="searchHistory", input={"query": "x"})),
            tool_results(
                ToolResultPart(call_id=f"s{n}", name="searchHistory", output="#1 hit " * 400)
            ),
        ]
    settings = CompactionSettings(prune_protect_tokens=0, prune_minimum_tokens=0)
    plan = plan_prune(display, None, count, settings, input_budget=100_000)
    pruned = {call for target in plan.targets for call in target.call_ids}
    assert {"s0", "s1", "s2", "s3"} <= pruned  # all but the last two turns'
    assert "searchHistory" not in CompactionSettings().protected_tools
