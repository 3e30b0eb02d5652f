"""Fewer glibc malloc arenas for the window's process.

glibc gives each thread that contends for the heap an arena of its own, up to eight per
core, and memory freed in one arena serves only that one. The window's process runs
Chromium's browser (and, without a sandbox, its renderer) next to the server, so dozens
of threads allocate through glibc. Two arenas measured 12 MB less at rest
(`benchmarks/memory_bench.py`), the same effect as `MALLOC_ARENA_MAX=2`, and no slower
start (`benchmarks/startup_bench.py`): the window's threads mostly wait.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import platform
from collections.abc import Callable

logger = logging.getLogger(__name__)

M_ARENA_MAX = -8
"""glibc's `mallopt` parameter for the most arenas (malloc.h)."""
ARENAS = 2


def _glibc() -> ctypes.CDLL | None:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name) if name else None


def limit_malloc_arenas(load_libc: Callable[[], ctypes.CDLL | None] = _glibc) -> bool:
    """Cap glibc's arenas before any thread starts; True when the cap was set.

    A cap the person set through `MALLOC_ARENA_MAX` is read by glibc itself at start;
    `mallopt` would override it, so it is left alone.
    """
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    try:
        libc = load_libc()
    except OSError:
        return False
    if libc is None:
        return False
    done = bool(libc.mallopt(M_ARENA_MAX, ARENAS))
    if not done:
        logger.debug("mallopt(M_ARENA_MAX) was refused")
    return done
