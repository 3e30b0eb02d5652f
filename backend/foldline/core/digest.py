"""The emergency fold: an extractive digest made without any model call.

When the summarizer fails (error, empty or malformed answer), is unavailable, or folds
keep failing to free room, the fold still has to happen: the next request must fit.
The digest is extracted, not written. The person's own words come first: the open task,
then the earlier requests (newest first); after them the files and tools touched, the
last errors, the latest activity and the previous summary, each cut to a share of a
token cap. Like a model summary, it then goes through `carry_forward`, which keeps the
person's own words after it (those earlier folds kept included). The resulting state is
marked `degraded` so the UI says so and a later fold can summarize properly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from foldline.core.carry_forward import carry_forward, kept_words, stack_words
from foldline.core.messages import AttachmentPart, Message
from foldline.core.person_words import words_cap
from foldline.core.planning import SLACK_TOKENS, plan_split
from foldline.core.prompts import render_message
from foldline.core.state import CompactionState, SaidWords, SummarizedRange, Trigger
from foldline.core.truncation import OutputCategory, truncate_tool_output

if TYPE_CHECKING:
    from foldline.core.fold_inputs import FoldInputs

DIGEST_BUDGET_SHARE = 0.10
MIN_DIGEST_TOKENS = 64
MAX_DIGEST_TOKENS = 4_000

REQUEST_QUOTE_TOKENS = 300
"""Each earlier user request is quoted up to this many tokens."""

RECENT_MESSAGES = 6
"""The latest folded messages shown (cut) under "Latest activity"."""

_PATH_KEYS = (
    "path",
    "file",
    "file_path",
    "filepath",
    "filename",
    "target_file",
    "paths",
    "files",
    "directory",
    "dir",
    "cwd",
)

# Section title, share of the cap, how to cut it; in reading order. Unused shares are
# handed to the sections that need more, in `_PRIORITY` order.
_SECTIONS: tuple[tuple[str, float, OutputCategory], ...] = (
    ("Open task (the last request in the folded part, verbatim)", 0.18, "file"),
    ("Earlier user requests (verbatim, newest first)", 0.30, "generic"),
    ("Files & artifacts touched", 0.07, "generic"),
    ("Tools used", 0.04, "generic"),
    ("Last errors", 0.07, "generic"),
    ("Latest activity", 0.14, "shell"),
    ("Earlier summary (trimmed)", 0.20, "file"),
)
_PRIORITY = (0, 1, 6, 5, 4, 2, 3)
"""The person's words first: spare room goes to them before anything else."""

_HEADER = (
    "Emergency digest: an extract of the folded messages made without a model; "
    "quotes are verbatim, cuts are marked."
)


def _paths_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value and len(value) < 300 and "\n" not in value else []
    if isinstance(value, list):
        return [v for item in value for v in _paths_in(item)][:20]
    return []


def _fit(text: str, cap: int, count_text: Callable[[str], int], kind: OutputCategory) -> str:
    if cap <= 0:
        return ""
    return truncate_tool_output(text, cap, count_text, category=kind).text


def _requests_section(requests: list[str], cap: int, count_text: Callable[[str], int]) -> str:
    """The earlier requests, newest first, as many as fit."""
    quotes = [f'- "{_fit(r, REQUEST_QUOTE_TOKENS, count_text, "file")}"' for r in requests]
    lines: list[str] = []
    used = 0
    for quote in reversed(quotes):
        size = count_text(quote) + 1
        if used + size > cap:
            continue
        lines.append(quote)
        used += size
    left_out = len(quotes) - len(lines)
    if left_out:
        lines.append(f"- ({left_out} older requests left out for space)")
    return "\n".join(lines)


def _natural_sections(
    messages: Sequence[Message], previous_summary: str | None
) -> tuple[list[str], list[str]]:
    """Each section's full text (before cutting), and the earlier requests themselves."""
    requests = [m.text.strip() for m in messages if m.role == "user" and m.text.strip()]
    files: dict[str, Counter[str]] = {}
    tools: Counter[str] = Counter()
    errors: list[str] = []
    for message in messages:
        for call in message.tool_calls:
            tools[call.name] += 1
            for key in _PATH_KEYS:
                for path in _paths_in(call.input.get(key)):
                    files.setdefault(path, Counter())[call.name] += 1
        for result in message.tool_results:
            if result.is_error:
                first = " ".join(result.output.strip().splitlines()[:3])[:400]
                errors.append(f"- {result.name}: {first}")
        for part in message.parts:
            if isinstance(part, AttachmentPart):
                files.setdefault(part.name, Counter())["attachment"] += 1
    open_task = requests[-1] if requests else ""
    earlier = requests[:-1]
    file_lines = [
        f"- {path} ({', '.join(f'{t} ×{n}' if n > 1 else t for t, n in uses.items())})"
        for path, uses in files.items()
    ]
    recent = messages[-RECENT_MESSAGES:]
    offset = len(messages) - len(recent)
    activity = "\n\n".join(render_message(offset + i, m) for i, m in enumerate(recent))
    sections = [
        open_task,
        "\n".join(f'- "{r}"' for r in reversed(earlier)),
        "\n".join(file_lines),
        ", ".join(f"{name} ×{n}" for name, n in tools.most_common()),
        "\n".join(errors[-3:]),
        activity,
        previous_summary or "",
    ]
    return sections, earlier


def extractive_digest(
    messages: Sequence[Message],
    previous_summary: str | None,
    cap_tokens: int,
    count_text: Callable[[str], int],
) -> str:
    """A digest of `messages` (and the previous summary), always at most `cap_tokens`.
    The person's words earlier folds kept are not repeated: they follow any summary.

    Message indices under "Latest activity" are relative to `messages`.
    """
    if cap_tokens <= 0 or count_text(_HEADER) > cap_tokens:
        return _fit(_HEADER, cap_tokens, count_text, "generic") if cap_tokens > 0 else ""
    room = cap_tokens - count_text(_HEADER) - 4 * len(_SECTIONS)
    natural, earlier = _natural_sections(messages, previous_summary)
    sizes = [count_text(text) for text in natural]
    allowance = [int(share * room) for _, share, _ in _SECTIONS]
    spare = sum(max(a - s, 0) for a, s in zip(allowance, sizes, strict=True))
    for i in _PRIORITY:
        need = sizes[i] - allowance[i]
        if need > 0 and spare > 0:
            extra = min(need, spare)
            allowance[i] += extra
            spare -= extra
    blocks = [_HEADER]
    for (title, _, kind), text, cap in zip(_SECTIONS, natural, allowance, strict=True):
        if not text.strip():
            continue
        heading = f"## {title}"
        room_left = cap - count_text(heading) - 2
        if title.startswith("Earlier user requests"):
            text = _requests_section(earlier, room_left, count_text)
        body = _fit(text, room_left, count_text, kind)
        if body:
            blocks.append(f"{heading}\n{body}")
    digest = "\n\n".join(blocks)
    if count_text(digest) > cap_tokens:
        # Tokenizers are not exactly additive: cut the whole if the parts overshoot.
        digest = _fit(digest, cap_tokens, count_text, "generic")
    return digest


def digest_tokens(input_budget: int | None) -> int:
    """The digest's usual cap: ~10% of the budget, within bounds."""
    if input_budget is None:
        return MAX_DIGEST_TOKENS
    share = int(input_budget * DIGEST_BUDGET_SHARE)
    return min(MAX_DIGEST_TOKENS, max(MIN_DIGEST_TOKENS, share))


def emergency_fold(inputs: FoldInputs, *, trigger: Trigger, reason: str) -> CompactionState | None:
    """Fold with an extractive digest, no model call; the view then fits the budget.

    Synchronous and total: whatever the history, the result is a state whose view is
    within the input budget, provided the system prompt, the tool schemas, the pins and
    the digest's frame fit in it at all. None only when there is nothing to fold and the
    view already fits. `reason` is why no model summary was made; the state has no field
    for it (it records `degraded=True`), so the caller reports it to the UI.
    """
    state = inputs.state
    counter = inputs.counter
    start = inputs.start
    input_budget = inputs.budget.input_budget
    settings = inputs.settings
    planner = inputs.planner()
    tokens_before = planner.view_tokens(start, state)
    cap = digest_tokens(input_budget)
    carry_cap = words_cap(input_budget, settings.person_words_share)
    split = plan_split(
        planner, summary_tokens=cap + carry_cap, input_budget=input_budget, settings=settings
    )
    if split is None:
        if state is None or input_budget is None or tokens_before <= input_budget:
            return None
        split = planner.end  # only the previous summary is over budget: re-digest it
    if input_budget is not None and split == planner.end:
        # Everything is folded: the digest may take the room the tail would have had.
        room = input_budget - planner.fixed - planner.frame - carry_cap
        target_room = int(settings.target * input_budget) - planner.fixed - planner.frame
        cap = max(0, min(room, max(cap, target_room - carry_cap)))
    # A digest never takes more room than what it replaces.
    replaced = tokens_before - planner.fixed - planner.tail_tokens(split)
    cap = min(cap, max(MIN_DIGEST_TOKENS, replaced))
    folded = inputs.window.between(start, split)
    previous = state.summary_message if state is not None else None
    earlier = state.carried_details if state is not None else ()
    new_state = CompactionState(
        version=(state.version if state is not None else 0) + 1,
        compacted_at=inputs.now,
        summary_message="",
        api_start_index=split,
        summarized_range=SummarizedRange(
            from_index=start, to_index=split, message_count=split - start
        ),
        strategy="emergency",
        trigger=trigger,
        tokens_before=tokens_before,
        tokens_after=0,
        model=inputs.model,
        degraded=True,
    )
    said = inputs.said(start, folded)
    words_for: dict[int, tuple[SaidWords, ...]] = {}
    tokens = tokens_before  # counted afresh by the first pass
    # Shrink the digest until the whole view fits (each pass removes the measured
    # excess); the person's words shrink only once the digest has nothing left to give.
    for _ in range(10):
        digest = extractive_digest(folded, previous, cap, counter.count_text)
        if carry_cap not in words_for:
            words_for[carry_cap] = stack_words(
                kept_words(state), said, carry_cap, counter.count_text
            )
        carry = carry_forward(
            digest, words=words_for[carry_cap], earlier_details=earlier, said=said
        )
        new_state = carry.applied_to(new_state.model_copy(update={"summary_message": digest}))
        tokens = planner.view_tokens(split, new_state)
        if input_budget is None or tokens <= input_budget or (cap <= 0 and carry_cap <= 0):
            break
        excess = tokens - input_budget + SLACK_TOKENS
        if cap > 0:
            cap = max(0, cap - excess)
        else:
            carry_cap = max(0, carry_cap - excess)
    return new_state.model_copy(update={"tokens_after": tokens})
