"""What the fake provider costs the tests that use it.

End-to-end tests (100-turn sessions, tool-heavy sessions) send every request through
`foldline.testing.FakeProviderServer`; this measures what one such request costs, so a
slow suite can be attributed to the right place:

- start + stop of a server (one per test module);
- the server-side work per request, without HTTP: decode the body into engine values,
  validate structure and tool pairing, count with the fake tokenizer, simulate the
  prompt cache; for histories of 10, 100 and 1,000 messages;
- a full round trip through the real SDKs (streamed, with usage) on a history of 200
  messages, both wires.

Run: .venv/bin/python benchmarks/fake_provider_bench.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import anthropic
import openai

from foldline.core.messages import Message, ToolCallPart, ToolResultPart, assistant, user
from foldline.providers.base import ModelRequest
from foldline.testing import (
    FakeProviderServer,
    FakeTokenizer,
    PromptCache,
    ScriptedModel,
    Wire,
    decode_request,
    encode_request,
)
from foldline.testing.validation import check_structure

WORDS = ("the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "while")


def history(n_messages: int) -> list[Message]:
    """Alternating turns; every third assistant turn calls a tool with a ~2 KB result."""
    messages: list[Message] = []
    i = 0
    while len(messages) < n_messages:
        text = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(60))
        messages.append(user(f"turn {i}: {text}"))
        if i % 3 == 2:
            tool_call = ToolCallPart(id=f"c{i}", name="read_file", input={"path": f"f{i}.txt"})
            messages.append(Message(role="assistant", parts=(tool_call,)))
            result = ToolResultPart(call_id=f"c{i}", name="read_file", output=text * 5)
            messages.append(Message(role="tool", parts=(result,)))
        messages.append(assistant(f"answer {i}: {text[:200]}"))
        i += 1
    # End on a user message so the request is one a client would send.
    while messages[-1].role != "user":
        messages.pop()
    return messages


def median_ms(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def server_side(body: dict[str, Any], wire: Wire) -> None:
    """The per-request work of the fake server, minus HTTP and the answer."""
    tokenizer = FakeTokenizer()
    decode_request(body, wire)
    check_structure(body, wire)
    elements = tokenizer.elements(body, wire)
    fixed = tokenizer.fixed_tokens(body, wire)
    cache = PromptCache()
    if wire == "anthropic":
        cache.anthropic("m", fixed, elements)
    else:
        cache.openai("m", fixed, elements)


async def round_trips(
    server: FakeProviderServer, request: ModelRequest, repeat: int
) -> dict[Wire, float]:
    claude = anthropic.AsyncAnthropic(base_url=server.anthropic_url, api_key="k", max_retries=0)
    gpt = openai.AsyncOpenAI(base_url=server.openai_url, api_key="k", max_retries=0)
    results: dict[Wire, float] = {}
    for wire in ("anthropic", "openai"):
        body = encode_request(request, wire)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            if wire == "anthropic":
                async with claude.messages.stream(
                    model=body["model"],
                    max_tokens=body["max_tokens"],
                    system=body["system"],
                    messages=body["messages"],
                ) as stream:
                    await stream.get_final_message()
            else:
                chunks = await gpt.chat.completions.create(
                    model=body["model"],
                    messages=body["messages"],
                    stream=True,
                    stream_options={"include_usage": True},
                )
                async for _ in chunks:
                    pass
            times.append(time.perf_counter() - start)
        results[wire] = statistics.median(times) * 1000
    await claude.close()
    await gpt.close()
    return results


def main(repeat: int) -> None:
    print(
        f"python {sys.version.split()[0]}, {platform.machine()}, processor={platform.processor()!r}"
    )

    def start_stop() -> None:
        FakeProviderServer().start().stop()

    print(f"server start + stop: {median_ms(start_stop, repeat):.1f} ms")

    tokenizer = FakeTokenizer()
    print("| messages | prompt tokens (fake) | server-side work, anthropic | openai |")
    print("| --- | --- | --- | --- |")
    for n in (10, 100, 1000):
        request = ModelRequest(model="m", system="You help.", messages=history(n))
        bodies = {wire: encode_request(request, wire) for wire in ("anthropic", "openai")}
        times = {}
        for wire, body in bodies.items():
            times[wire] = median_ms(lambda b=body, w=wire: server_side(b, w), repeat)
        tokens = tokenizer.count_request(bodies["anthropic"], "anthropic")
        print(f"| {n} | {tokens:,} | {times['anthropic']:.2f} ms | {times['openai']:.2f} ms |")

    request = ModelRequest(
        model="big", system="You help.", messages=history(200), max_output_tokens=1000
    )
    with FakeProviderServer(
        ScriptedModel(when_empty=lambda r: "A short answer of a few words.")
    ) as server:
        results = asyncio.run(round_trips(server, request, repeat))
    tokens = tokenizer.count_model_request(request, "anthropic")
    print(f"round trip through the SDK, 200 messages ({tokens:,} tokens), streamed:")
    for wire, ms in results.items():
        print(f"  {wire}: {ms:.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    main(parser.parse_args().repeat)
