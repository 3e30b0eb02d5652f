"""Twenty large images in a conversation: every later turn reuses their scaled bytes,
and the scaling never runs on the event loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from foldline.providers import image_fit
from foldline.providers.image_fit import fit_anthropic_images
from foldline.testing import sample_files


def _turn(images: list[str]) -> list[dict[str, Any]]:
    blocks = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
        for data in images
    ]
    return [{"role": "user", "content": blocks}]


def test_twenty_large_images_are_scaled_once_not_on_every_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    image_fit._SCALED.clear()
    images = [sample_files.b64(sample_files.png(2100, 2100, rgb=(n, 0, 0))) for n in range(20)]
    scaled: list[int] = []
    real_scale = image_fit._scale

    def counted(data: str, media_type: str) -> Any:
        scaled.append(1)
        return real_scale(data, media_type)

    monkeypatch.setattr(image_fit, "_scale", counted)
    fit_anthropic_images(_turn(images))
    assert len(scaled) == 20
    # The next turns send the same images again: all of them come from the cache
    # (16 entries once thrashed, and every turn scaled all twenty again).
    for _ in range(2):
        fit_anthropic_images(_turn(images))
    assert len(scaled) == 20


def test_an_anthropic_request_is_built_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    from foldline.providers.anthropic import AnthropicProvider
    from foldline.providers.base import ModelRequest
    from foldline.providers.errors import ProviderError

    threads: list[bool] = []

    def fit(messages: list[dict[str, Any]]) -> None:
        threads.append(threading.current_thread() is threading.main_thread())

    monkeypatch.setattr("foldline.providers.anthropic.fit_anthropic_images", fit)
    provider = AnthropicProvider(name="a", api_key="k", base_url="http://127.0.0.1:9")

    async def first_event() -> None:
        request = ModelRequest(model="claude-test", system="s", messages=[], tools=[])
        with pytest.raises(ProviderError):  # nothing listens on port 9
            async for _ in provider.stream(request):
                break

    asyncio.run(first_event())
    assert threads == [False]
