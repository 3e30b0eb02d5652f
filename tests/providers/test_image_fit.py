"""Images over 2000 px are sent to Anthropic scaled down, deterministically."""

from __future__ import annotations

import base64
import io

from PIL import Image

from foldline.core.attachments import image_size
from foldline.providers import image_fit
from foldline.providers.image_fit import fit_anthropic_images, scaled_image
from foldline.testing import sample_files


def _image_block(media_type: str, data: bytes) -> dict:
    source = {"type": "base64", "media_type": media_type, "data": sample_files.b64(data)}
    return {"type": "image", "source": source}


def _pillow(width: int, height: int, kind: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (10, 200, 30)).save(buffer, kind)
    return buffer.getvalue()


def _size(block: dict) -> tuple[int, int]:
    source = block["source"]
    return image_size(base64.b64decode(source["data"]), source["media_type"])


def test_large_images_are_scaled_to_2000_px_and_small_ones_left_alone() -> None:
    small = _image_block("image/png", sample_files.png(1999, 300))
    large = _image_block("image/png", sample_files.png(2400, 4000))
    photo = _image_block("image/jpeg", _pillow(3000, 1000, "JPEG"))
    gif = _image_block("image/gif", _pillow(2500, 100, "GIF"))
    header_only = _image_block("image/gif", sample_files.gif(2500, 100))
    header_before = dict(header_only["source"])
    small_before = dict(small["source"])
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "look"}, small, large, gif]},
        {"role": "user", "content": [header_only]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t", "content": [photo]}],
        },
    ]
    fit_anthropic_images(messages)
    assert small["source"] == small_before
    assert _size(large) == (1200, 2000) and large["source"]["media_type"] == "image/png"
    assert _size(photo) == (2000, 666) and photo["source"]["media_type"] == "image/jpeg"
    assert _size(gif) == (2000, 80) and gif["source"]["media_type"] == "image/png"
    # Bytes whose header says 2500 px but that cannot be decoded are left for the API.
    assert header_only["source"] == header_before


def test_the_scaled_bytes_are_the_same_every_time() -> None:
    data = sample_files.b64(sample_files.png(3000, 2000, rgb=(1, 2, 3)))
    first = scaled_image(data, "image/png")
    image_fit._SCALED.clear()  # scaled afresh: the same bytes again
    assert scaled_image(data, "image/png") == first
    assert first is not None and first[0] == "image/png"
    assert scaled_image("bm90IGFuIGltYWdl", "image/png") is None
