"""The title of a conversation continued in a new one."""

from foldline.api.schemas import MAX_TITLE_CHARS
from foldline.chat.handoff import continued_title


def test_a_hand_off_of_a_hand_off_numbers_its_title_instead_of_piling_up_suffixes():
    assert continued_title("Parser") == "Parser (continued)"
    assert continued_title("Parser (continued)") == "Parser (continued 2)"
    assert continued_title("Parser (continued 2)") == "Parser (continued 3)"


def test_a_long_title_is_cut_to_leave_room_for_the_suffix():
    title = continued_title("x" * MAX_TITLE_CHARS)
    assert len(title) == MAX_TITLE_CHARS
    assert title.endswith(" (continued)")


def test_a_second_hand_off_of_one_conversation_gets_a_title_of_its_own():
    taken = {"Parser (continued)"}
    assert continued_title("Parser", taken) == "Parser (continued 2)"
    taken = {"Parser (continued 2)", "Parser (continued 3)"}
    assert continued_title("Parser (continued)", taken) == "Parser (continued 4)"
