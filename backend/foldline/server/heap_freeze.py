"""The launched app's objects, kept out of the cyclic garbage collector's full passes.

A full (generation 2) collection walks every tracked object in the process, and it runs
in whichever thread happens to allocate, holding the GIL: the event loop stops for all
of it. After the launch the heap holds some 100,000-150,000 such objects (the SDKs'
modules and classes, pydantic's schemas, the routes), nearly all alive until exit, and
`benchmarks/server_bench.py --only-reads` measured each full pass at 75-130 ms, the
largest stall of an idle server and of one streaming ten answers.

`gc.freeze()` moves every object alive at that moment to a permanent generation that
collections skip. What it moves is collected first, so no garbage is kept; an object
frozen here is still freed by its reference count when it is dropped, only a reference
cycle made of frozen objects would outlive its use, and the objects alive at the
launch are the app's own for its whole life. Only the launched app freezes: a test
process builds hundreds of apps and must keep collecting their cycles.
"""

from __future__ import annotations

import gc

from fastapi import FastAPI

from foldline.chat.service import ChatService


def freeze_the_heap() -> int:
    """Collect the garbage there is, then freeze what is left; returns how many objects
    are frozen now (the permanent generation's count)."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


async def warm_up_then_freeze(app: FastAPI, service: ChatService) -> None:
    """The chat service's warm-up (the provider SDK's import, the tokenizer's load), then,
    for an app that freezes its heap, a second freeze: what the warm-up loaded lives as
    long as the app."""
    await service.warm_up()
    if app.state.freeze_heap:
        freeze_the_heap()
