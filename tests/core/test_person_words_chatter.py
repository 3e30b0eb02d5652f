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
