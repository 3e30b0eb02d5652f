"""What images and PDFs cost in tokens, by the providers' published rules.

- Anthropic (vision page): an image whose long edge is over 1568 px, or that would cost
  over ~1,600 tokens (about 1.2 megapixels), is first scaled down keeping its aspect
  ratio; it then costs about width x height / 750 tokens. Before that, Foldline itself
  sends an image with a side over 2000 px scaled to fit 2000 x 2000
  (`anthropic_sent_size`), and counts it at that size.
- OpenAI (images and vision page, GPT-4o-class models at `detail: high`, what `auto`
  picks for these sizes): the image is scaled to fit a 2048 x 2048 square, then so that
  its shortest side is at most 768 px; it costs 85 tokens plus 170 per 512 px tile.
- A PDF page (both providers' PDF pages): the page's extracted text plus an image of the
  page. The page image is a US-letter page at the size each provider reads it at; the
  text is counted by the wire's own text counter from the extracted text.

The sizes come from the part's metadata (read at upload), never from decoding bytes, so
counting stays cheap and identical every turn.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from foldline.core.messages import AttachmentPart, Message

ANTHROPIC_SENT_MAX_SIDE = 2000
"""Foldline sends Anthropic no image with a side over 2000 px: the API refuses such an
image in a request with more than 20 images, and it never shows a model more than
1568 px anyway, so scaling every such image down (not only in many-image requests)
loses nothing and keeps an image's bytes the same whatever else is in the request."""
ANTHROPIC_MAX_LONG_EDGE = 1568
ANTHROPIC_MAX_PIXELS = 1_600 * 750
"""~1.2 megapixels: an image over ~1,600 tokens is scaled down (Anthropic's table of the
largest unscaled sizes: 1092x1092, 951x1268, 896x1344, 819x1456, 784x1568)."""
ANTHROPIC_PIXELS_PER_TOKEN = 750

OPENAI_FIT_SQUARE = 2048
OPENAI_SHORT_SIDE = 768
OPENAI_TILE = 512
OPENAI_BASE_TOKENS = 85
OPENAI_TILE_TOKENS = 170

LETTER_PAGE_PX = (1224, 1584)
"""A US-letter page (8.5 x 11 in) rendered at 144 dpi, before a provider's downscale."""


def anthropic_sent_size(width: int, height: int) -> tuple[int, int]:
    """The size an image is sent to Anthropic at: as it is, or scaled down (aspect ratio
    kept, rounded down) to fit `ANTHROPIC_SENT_MAX_SIDE` on both sides."""
    side = max(width, height)
    if side <= ANTHROPIC_SENT_MAX_SIDE:
        return width, height
    scale = ANTHROPIC_SENT_MAX_SIDE / side
    return max(1, int(width * scale)), max(1, int(height * scale))


def anthropic_image_tokens(width: int, height: int) -> int:
    """What an image of this size costs as Foldline sends it (see `anthropic_sent_size`)."""
    width, height = anthropic_sent_size(width, height)
    scale = min(1.0, ANTHROPIC_MAX_LONG_EDGE / max(width, height))
    scale = min(scale, math.sqrt(ANTHROPIC_MAX_PIXELS / (width * height)))
    scaled_w, scaled_h = max(1, int(width * scale)), max(1, int(height * scale))
    return max(1, math.ceil(scaled_w * scaled_h / ANTHROPIC_PIXELS_PER_TOKEN))


def openai_image_tokens(width: int, height: int) -> int:
    scale = min(1.0, OPENAI_FIT_SQUARE / max(width, height))
    w, h = width * scale, height * scale
    shrink = min(1.0, OPENAI_SHORT_SIDE / min(w, h))
    w, h = w * shrink, h * shrink
    tiles = math.ceil(int(w) / OPENAI_TILE) * math.ceil(int(h) / OPENAI_TILE)
    return OPENAI_BASE_TOKENS + OPENAI_TILE_TOKENS * max(tiles, 1)


ANTHROPIC_PDF_PAGE_IMAGE_TOKENS = anthropic_image_tokens(*LETTER_PAGE_PX)
"""~1,600: with the page's text, the low end of the 1,500-3,000 tokens a page costs
according to Anthropic's PDF support page."""
OPENAI_PDF_PAGE_IMAGE_TOKENS = openai_image_tokens(*LETTER_PAGE_PX)
"""765: a letter page at high detail is 2 x 2 tiles."""


def pdf_tokens(part: AttachmentPart, count_text: Callable[[str], int], page_image: int) -> int:
    """A PDF sent as a document: its text plus an image of every page."""
    return count_text(part.text or "") + (part.pages or 1) * page_image


def parts_by_data(message: Message) -> dict[str, AttachmentPart]:
    """The message's attachments by their base64 data, so a wire block (which holds only
    the data) can be matched to the part that knows its size and pages."""
    return {
        part.data_base64: part
        for part in message.parts
        if isinstance(part, AttachmentPart) and part.data_base64
    }


def data_url_payload(url: str) -> str:
    """The base64 data of a `data:...;base64,` URL ("" for any other URL)."""
    head, _, data = url.partition(";base64,")
    return data if head.startswith("data:") else ""


AttachmentsByData = Mapping[str, AttachmentPart]
NO_FILES: AttachmentsByData = {}
"""No attachments to match (a payload counted without its engine message)."""


def sent_media_tokens(
    message: Message,
    *,
    images: bool,
    documents: bool,
    image_tokens: Callable[[int, int], int],
    page_image_tokens: int,
) -> int:
    """The formula-billed tokens of a person's files as a wire sends them: each image's,
    and each PDF page's image (a PDF's text is tokenizer text). Tool messages' images
    are left out: their size is unknown, and their fixed cost is an estimate."""
    if message.role != "user":
        return 0
    total = 0
    for part in message.parts:
        if not isinstance(part, AttachmentPart) or not part.data_base64 or part.as_text:
            continue
        if images and part.width and part.height and part.media_type != "application/pdf":
            total += image_tokens(part.width, part.height)
        elif documents and part.media_type == "application/pdf":
            total += (part.pages or 1) * page_image_tokens
    return total
