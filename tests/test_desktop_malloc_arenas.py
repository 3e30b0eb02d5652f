"""The window's process caps glibc's malloc arenas, unless the person chose a cap."""

from __future__ import annotations

import pytest

from foldline_desktop.malloc_arenas import ARENAS, M_ARENA_MAX, limit_malloc_arenas


class FakeLibc:
    def __init__(self, answer: int = 1) -> None:
        self.calls: list[tuple[int, int]] = []
        self.answer = answer

    def mallopt(self, parameter: int, value: int) -> int:
        self.calls.append((parameter, value))
        return self.answer


def test_the_arenas_are_capped_on_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    libc = FakeLibc()
    assert limit_malloc_arenas(lambda: libc)  # type: ignore[arg-type,return-value]
    assert libc.calls == [(M_ARENA_MAX, ARENAS)]


def test_a_refused_cap_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert not limit_malloc_arenas(lambda: FakeLibc(answer=0))  # type: ignore[arg-type,return-value]


def test_the_person_s_own_cap_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    libc = FakeLibc()
    assert not limit_malloc_arenas(lambda: libc)  # type: ignore[arg-type,return-value]
    assert libc.calls == []


def test_without_glibc_nothing_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert not limit_malloc_arenas(lambda: None)


def test_the_real_glibc_accepts_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """On this (glibc) machine the call goes through to the real mallopt."""
    import platform

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("not a glibc system")
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert limit_malloc_arenas()
