"""Images scaled down to the size Anthropic takes in any request.

Anthropic refuses an image with a side over 2000 px once a request holds more than 20
images, and never shows a model more than 1568 px of an image anyway. So every image
bigger than 2000 px is sent scaled down to fit 2000 x 2000 (the size
`anthropic_sent_size` gives, which is also what the token counter counts), whatever
else the request holds: an image's bytes then never depend on how many other images are
in view, and the cached prefix holds. The stored file stays the original.

The scaling is deterministic (same bytes in, same bytes out) and cached by the data's
sha256, so a conversation's image is scaled once, not on every turn.
"""

from __future__ import annotations

import base64
import hashlib
import io
import threading
from collections import OrderedDict
from typing import Any

from foldline.core.attachments import MAX_IMAGE_BASE64_BYTES, image_size
from foldline.core.tokens.attachments import ANTHROPIC_SENT_MAX_SIDE, anthropic_sent_size
from foldline.core.wire.common import IMAGE_TYPES


def fit_anthropic_images(messages: list[dict[str, Any]]) -> None:
    """Replace, in place, the base64 source of every image block (a tool result's too)
    that has a side over 2000 px with the scaled-down image."""
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if block.get("type") == "image":
                _fit_block(block)
            inner = block.get("content")
            if block.get("type") == "tool_result" and isinstance(inner, list):
                for item in inner:
                    if isinstance(item, dict) and item.get("type") == "image":
                        _fit_block(item)


def _fit_block(block: dict[str, Any]) -> None:
    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64":
        return
    media_type, data = str(source.get("media_type", "")), str(source.get("data", ""))
    if media_type not in IMAGE_TYPES:
        return
    size = _header_size(data, media_type)
    if size is None:  # not a readable image: the API's own check answers
        return
    width, height = size
    if max(width, height) <= ANTHROPIC_SENT_MAX_SIDE:
        return
    scaled = scaled_image(data, media_type)
    if scaled is not None:
        block["source"] = {"type": "base64", "media_type": scaled[0], "data": scaled[1]}


def _header_size(data: str, media_type: str) -> tuple[int, int] | None:
    """The image's size from its header, decoding only the first 64 kB when that holds
    it (a JPEG's frame header may sit after large metadata: then all of it)."""
    for chunk in (data[: 64 * 1024 // 3 * 4], data):
        try:
            return image_size(base64.b64decode(chunk), media_type)
        except ValueError:  # a damaged header, or cut short in the first chunk
            if len(chunk) == len(data):
                return None
    return None


_SCALED: OrderedDict[tuple[str, str], tuple[str, str] | None] = OrderedDict()
_SCALED_MAX = 100
"""Scaled images kept, by the sha256 of their source (the data itself would make a large
key): a conversation's large images are scaled once, not on every turn. A request holds
at most 100 images, so a turn's images all stay (16 once thrashed with 20 images, and
every turn scaled them all again)."""
_SCALED_MAX_CHARS = 64 * 1024 * 1024
"""And at most this much scaled base64: a request carries at most 32 MB, so two turns'
images (two conversations taking turns) stay."""
_SCALED_LOCK = threading.Lock()


def _scaled_chars() -> int:
    return sum(len(value[1]) for value in _SCALED.values() if value is not None)


def scaled_image(data: str, media_type: str) -> tuple[str, str] | None:
    """(media type, base64) of the image scaled to `anthropic_sent_size`: a JPEG stays a
    JPEG; any other image becomes a PNG (GIF's palette and WebP add nothing at this
    size), or a JPEG when the PNG would be over the 5 MB an image may be. None when
    the bytes cannot be decoded. Deterministic: the same data gives the same bytes."""
    key = (hashlib.sha256(data.encode("ascii")).hexdigest(), media_type)
    with _SCALED_LOCK:
        if key in _SCALED:
            _SCALED.move_to_end(key)
            return _SCALED[key]
    scaled = _scale(data, media_type)
    with _SCALED_LOCK:
        _SCALED[key] = scaled
        while len(_SCALED) > _SCALED_MAX or (
            len(_SCALED) > 1 and _scaled_chars() > _SCALED_MAX_CHARS
        ):
            _SCALED.popitem(last=False)
    return scaled


def _scale(data: str, media_type: str) -> tuple[str, str] | None:
    from PIL import Image  # imported here: only large images need it

    try:
        with Image.open(io.BytesIO(base64.b64decode(data))) as image:
            image.load()
            size = anthropic_sent_size(*image.size)
            converted = image.convert("RGB" if media_type == "image/jpeg" else "RGBA")
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
    resized = converted.resize(size, Image.Resampling.LANCZOS)
    if media_type != "image/jpeg":
        encoded = _encode(resized, "PNG")
        if len(encoded) <= MAX_IMAGE_BASE64_BYTES:
            return "image/png", encoded
        flat = Image.new("RGB", resized.size, (255, 255, 255))
        flat.paste(resized, mask=resized.getchannel("A"))
        resized = flat
    return "image/jpeg", _encode(resized, "JPEG")


def _encode(image: Any, kind: str) -> str:
    buffer = io.BytesIO()
    if kind == "PNG":
        image.save(buffer, "PNG", compress_level=6)
    else:
        image.save(buffer, "JPEG", quality=90, subsampling=0)
    return base64.b64encode(buffer.getvalue()).decode("ascii")
