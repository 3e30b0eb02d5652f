"""window.json: remembered size, position, conversation and port; never fatal when bad."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from foldline_desktop.window_state import (
    DEFAULT_HEIGHT,
    DEFAULT_WIDTH,
    MIN_HEIGHT,
    MIN_WIDTH,
    WINDOW_STATE_FILE,
    Rect,
    WindowState,
    load_window_state,
    place_window,
    save_window_state,
    state_from_json,
)


def test_first_run_has_defaults(tmp_path: Path) -> None:
    state = load_window_state(tmp_path)
    assert state == WindowState()
    assert (state.width, state.height, state.x, state.y) == (
        DEFAULT_WIDTH,
        DEFAULT_HEIGHT,
        None,
        None,
    )


def test_saved_state_comes_back(tmp_path: Path) -> None:
    state = WindowState(
        width=1000,
        height=700,
        x=15,
        y=30,
        maximized=True,
        last_conversation_id="c_01HZX",
        last_port=51234,
    )
    save_window_state(tmp_path, state)
    assert load_window_state(tmp_path) == state
    # Saving leaves no temporary files behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == [WINDOW_STATE_FILE]


def test_malformed_json_falls_back_to_defaults(tmp_path: Path) -> None:
    (tmp_path / WINDOW_STATE_FILE).write_text("{not json", encoding="utf-8")
    assert load_window_state(tmp_path) == WindowState()


def test_each_bad_field_defaults_on_its_own() -> None:
    state = state_from_json(
        {
            "width": 900,
            "height": "tall",
            "x": True,
            "y": 40,
            "maximized": "yes",
            "last_conversation_id": "conv-7",
            "last_port": 80,
        }
    )
    assert state.width == 900
    assert state.height == DEFAULT_HEIGHT
    # Half a position is no position: x was invalid, so y is dropped with it.
    assert (state.x, state.y) == (None, None)
    assert state.maximized is False
    assert state.last_conversation_id == "conv-7"
    assert state.last_port is None


def test_tiny_or_huge_sizes_are_rejected() -> None:
    assert state_from_json({"width": 10, "height": 99999}) == WindowState()


def test_conversation_ids_that_could_not_be_real_are_dropped() -> None:
    assert state_from_json({"last_conversation_id": "x" * 500}).last_conversation_id is None
    assert state_from_json({"last_conversation_id": "a\nb"}).last_conversation_id is None
    assert state_from_json({"last_conversation_id": 12}).last_conversation_id is None


PRIMARY = Rect(0, 0, 1280, 800)
RIGHT = Rect(1280, 0, 1920, 1080)


def test_first_run_is_centred_and_fits_the_primary_screen() -> None:
    assert place_window(WindowState(), [PRIMARY, RIGHT]) == Rect(40, 0, 1200, 800)
    assert place_window(WindowState(width=800, height=600), [PRIMARY]) == Rect(240, 100, 800, 600)


def test_a_remembered_place_on_a_second_screen_is_kept() -> None:
    state = WindowState(width=1000, height=700, x=1500, y=100)
    assert place_window(state, [PRIMARY, RIGHT]) == Rect(1500, 100, 1000, 700)


def test_a_window_left_on_an_unplugged_monitor_comes_back_to_the_primary_one() -> None:
    state = WindowState(width=1000, height=700, x=1500, y=100)
    assert place_window(state, [PRIMARY]) == Rect(140, 50, 1000, 700)


def test_a_window_hanging_off_the_edge_is_pulled_fully_onto_its_screen() -> None:
    state = WindowState(width=1000, height=700, x=1000, y=500)
    assert place_window(state, [PRIMARY]) == Rect(280, 100, 1000, 700)


def test_no_screen_information_keeps_the_remembered_place() -> None:
    state = WindowState(width=900, height=600, x=5, y=6)
    assert place_window(state, []) == Rect(5, 6, 900, 600)


screen_rects = st.builds(
    Rect,
    x=st.integers(-4000, 4000),
    y=st.integers(-4000, 4000),
    width=st.integers(MIN_WIDTH, 5000),
    height=st.integers(MIN_HEIGHT, 5000),
)


@given(
    data=st.fixed_dictionaries(
        {
            "width": st.integers(-50_000, 50_000),
            "height": st.integers(-50_000, 50_000),
            "x": st.integers(-50_000, 50_000),
            "y": st.integers(-50_000, 50_000),
        }
    ),
    screens=st.lists(screen_rects, min_size=1, max_size=3),
)
def test_the_window_always_opens_entirely_on_one_screen(
    data: dict[str, int], screens: list[Rect]
) -> None:
    place = place_window(state_from_json(data), screens)
    assert any(
        screen.x <= place.x
        and place.x + place.width <= screen.x + screen.width
        and screen.y <= place.y
        and place.y + place.height <= screen.y + screen.height
        for screen in screens
    )
    assert place.width > 0 and place.height > 0


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), st.lists, max_leaves=5))
def test_any_json_value_loads_without_raising(value: object) -> None:
    assert isinstance(state_from_json(value), WindowState)
    assert isinstance(state_from_json({"width": value, "last_conversation_id": value}), WindowState)


def test_file_written_is_plain_json_a_person_can_read(tmp_path: Path) -> None:
    save_window_state(tmp_path, WindowState(x=1, y=2))
    data = json.loads((tmp_path / WINDOW_STATE_FILE).read_text(encoding="utf-8"))
    assert data["x"] == 1 and data["y"] == 2 and data["width"] == DEFAULT_WIDTH
