"""An answer's speed, stored with its usage: the wait for its first token and its tokens
per second while it streamed (the clock is given, so nothing here is timed)."""

from __future__ import annotations

from foldline.chat.answer import StreamedAnswer, answer_usage
from foldline.providers.base import Usage


def test_speed_is_timed_from_the_first_delta() -> None:
    answer = StreamedAnswer(sent_at=10.0)
    for now in (10.8, 11.3, 12.8):
        answer.arrived(now)
    answer.usage = Usage(input_tokens=100, output_tokens=200)
    assert answer.speed() == {"firstTokenSeconds": 0.8, "tokensPerSecond": 100.0}
    stored = answer_usage(answer.usage, None, None, answer.speed())
    assert stored["firstTokenSeconds"] == 0.8 and stored["tokensPerSecond"] == 100.0
    assert stored["outputTokens"] == 200


def test_no_speed_without_deltas_or_a_single_instant() -> None:
    assert StreamedAnswer(sent_at=1.0).speed() == {}
    one = StreamedAnswer(sent_at=1.0)
    one.arrived(1.5)
    one.usage = Usage(input_tokens=5, output_tokens=40)
    # One delta: the wait is known, a rate over no time is not.
    assert one.speed() == {"firstTokenSeconds": 0.5}
