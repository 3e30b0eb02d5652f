"""Condensing the person's words: chatter goes, plain-word statements stay.

Each case here was a fault seen on long real conversations: interjections taken for
names, a name spoken to taken for a person named, "Take care!" taken for a role, short
replies kept by the hundred, plain-word facts about the person's life cut."""

from __future__ import annotations

from foldline.core.person_words import fit_words, is_key_sentence, words_block
from foldline.core.state import SaidWords


def count(text: str) -> int:
    return max(1, len(text) // 4)


def test_a_capitalized_interjection_is_not_a_name() -> None:
    for sentence in (
        "Wow, that is a lot of rain.",
        "Yep, will check it after dinner.",
        "Cheers, that was quick work there.",
    ):
        assert not is_key_sentence(sentence), sentence
    assert not is_key_sentence("Wow!")
    assert not is_key_sentence("Yep!")


def test_someone_spoken_to_is_not_someone_named() -> None:
    for sentence in (
        "Thanks, Sam!",
        "Thank you so much, Sam!",
        "Hi Ana, hope the weekend was good for you.",
        "That was a really helpful answer, Tom.",
        "Good night, Priya, talk to you soon.",
    ):
        assert not is_key_sentence(sentence), sentence
    # Naming someone in a statement still counts.
    assert is_key_sentence("Had lunch with Beatriz, she's moving to Canada.")
    assert is_key_sentence("Thanks to Sam the release went out on time.")


def test_take_care_is_not_a_role() -> None:
    assert not is_key_sentence("Take care!")
    assert not is_key_sentence("Ok, take care and talk to you soon then.")
    assert is_key_sentence("Omar takes care of the invoices from now on.")


def test_short_answers_are_chatter_unless_they_hold_a_fact_or_a_name() -> None:
    for sentence in ("Sounds good, do it.", "Agreed.", "Don't worry!", "Sure, use it."):
        assert not is_key_sentence(sentence), sentence
    for sentence in ("Let's use Redis.", "Port 8443 then.", "Actually, forget Redis."):
        assert is_key_sentence(sentence), sentence


def test_plain_word_facts_of_the_persons_life_are_kept() -> None:
    for sentence in (
        "Been reading up on community gardens – wanted one for years…",
        "My sister just started as a nurse at the hospital.",
        "We finally sold the old car and got a cargo bike.",
        "Honestly I can't stand cilantro in anything at all.",
        "The kickoff with the whole team is in March this time.",
        "Adopted a rescue dog last weekend with the kids.",
    ):
        assert is_key_sentence(sentence), sentence
    for sentence in (
        "The weather has been all over the place lately.",
        "Long day at work again, the trains were a mess.",
    ):
        assert not is_key_sentence(sentence), sentence


def test_condensing_keeps_the_fact_and_drops_the_pleasantries() -> None:
    words = [
        SaidWords(
            index=0,
            text=(
                "Wow! Thanks, Sam! Been reading up on beekeeping, always wanted to try. "
                "Agreed. Take care!"
            ),
        ),
        SaidWords(index=2, text="The newest message stays as it is, whatever it says."),
    ]
    kept = fit_words(words, count(words_block(words)) - 5, count)
    assert kept[0].text == "Been reading up on beekeeping, always wanted to try. […]"
    assert kept[1] == words[1]


def test_over_budget_a_specific_fact_said_long_ago_outlasts_vague_remarks_made_since() -> None:
    from foldline.core.person_words import sentence_weight

    old_fact = "My sister Maren just started as a nurse at the hospital in Leeds."
    vague = [
        "Work is calmer now that the big project shipped, kind of.",
        "Our holiday photos are still on my phone, I should print some.",
        "Thinking about the trip again, I can't decide on dates, as usual.",
    ]
    assert sentence_weight(old_fact) == 3
    assert all(sentence_weight(s) < 3 for s in vague), [sentence_weight(s) for s in vague]
    words = [SaidWords(index=0, text=old_fact)]
    words += [SaidWords(index=2 * (i + 1), text=s) for i, s in enumerate(vague * 3)]
    words.append(SaidWords(index=40, text="The newest one stays whatever it says, honestly."))
    cap = count(words_block([words[0], *words[-3:]]))
    kept = fit_words(words, cap, count)
    assert count(words_block(kept)) <= cap
    assert kept[0].index == 0 and old_fact in kept[0].text  # not the oldest-first drop
    assert kept[-1] == words[-1]
    assert len(kept) < len(words)


def test_an_override_outlasts_what_it_overrides_when_sentences_go() -> None:
    words = [
        SaidWords(index=0, text="Let's use Redis for the sessions, it is quick."),
        SaidWords(index=2, text="Work is calmer now that the big project shipped, kind of."),
        SaidWords(index=4, text="Actually, forget Redis; sessions go in Postgres."),
        SaidWords(index=6, text="Our holiday photos are still on my phone, I should print some."),
        SaidWords(index=8, text="The newest one stays whatever it says, honestly."),
    ]
    for cap in range(count(words_block(words)), 40, -4):
        kept = fit_words(words, cap, count)
        text = words_block(kept)
        if "Let's use Redis" in text:
            assert "forget Redis" in text, cap
