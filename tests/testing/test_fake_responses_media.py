"""The fake Responses server takes `input_image` and `input_file` items as strictly as
the real API (and as the fake Chat and Anthropic servers take their image and document
parts), and bills them by the same formulas."""

from __future__ import annotations

from typing import Any

import pytest

from foldline.core.tokens.attachments import OPENAI_PDF_PAGE_IMAGE_TOKENS, openai_image_tokens
from foldline.testing import sample_files
from foldline.testing.fake_tokenizer import FakeTokenizer
from foldline.testing.media_checks import RESPONSES_MAX_IMAGES
from foldline.testing.responses_wire import check_responses, responses_as_chat

PNG = sample_files.png(1200, 800)
PDF = sample_files.pdf(["Quarterly report: revenue rose 12%.", "Costs fell."])


def _image(media_type: str, data: bytes, **extra: Any) -> dict[str, Any]:
    url = f"data:{media_type};base64,{sample_files.b64(data)}"
    return {"type": "input_image", "image_url": url, "detail": "auto", **extra}


def _file(data: bytes, filename: str | None = "a.pdf", media_type: str = "application/pdf"):
    item: dict[str, Any] = {
        "type": "input_file",
        "file_data": f"data:{media_type};base64,{sample_files.b64(data)}",
    }
    if filename is not None:
        item["filename"] = filename
    return item


def _body(*parts: dict[str, Any], role: str = "user") -> dict[str, Any]:
    content = [{"type": "input_text", "text": "see"}, *parts]
    return {"model": "m", "input": [{"role": role, "content": content}]}


def test_good_images_and_files_pass() -> None:
    assert check_responses(_body(_image("image/png", PNG), _file(PDF))) is None


@pytest.mark.parametrize(
    ("part", "words"),
    [
        (_image("image/png", sample_files.gif(10, 10)), "unsupported image"),
        (_image("image/png", PDF), "unsupported image"),
        (_image("image/bmp", b"BM...."), "unsupported image"),
        (_image("text/plain", b"hello"), "Expected a base64-encoded data URL"),
        (_image("image/png", b"\x89PNG\r\n\x1a\n"), "unsupported image"),  # no header
        (_image("image/png", PNG, detail="max"), "Supported values are: 'low'"),
        (_file(PNG), "Invalid file data"),
        (_file(PDF, media_type="text/plain"), "Invalid file data"),
        (_file(PDF, filename=None), "Missing required parameter: 'input[0].content[1].filename'"),
        (_file(sample_files.pdf(["p"] * 101)), "at most 100 pages"),
        ({"type": "image_url", "image_url": {"url": "x"}}, "Invalid value: 'image_url'"),
    ],
)
def test_bad_items_are_refused(part: dict[str, Any], words: str) -> None:
    error = check_responses(_body(part))
    assert error is not None and error.status == 400, error
    assert words in error.message


def test_an_assistant_message_holds_no_images_or_files() -> None:
    error = check_responses(_body(_image("image/png", PNG), role="assistant"))
    assert error is not None and "Invalid value: 'input_text'" in error.message


def test_the_request_totals_are_limited() -> None:
    small = _image("image/png", sample_files.png(8, 8))
    error = check_responses(_body(*[small] * (RESPONSES_MAX_IMAGES + 1)))
    assert error is not None and "Too many images" in error.message
    assert check_responses(_body(*[small] * RESPONSES_MAX_IMAGES)) is None
    # 50 MB of image data in one request is too much, however it is split.
    big = _image("image/png", sample_files.png(8, 8) + b"\0" * (18 * 1024 * 1024))
    assert check_responses(_body(big, big)) is None  # 2 x 24 MB of base64
    too_much = check_responses(_body(big, big, big))
    assert too_much is not None and too_much.status == 413
    assert "at most 50MB" in too_much.message


def test_images_and_files_are_billed_by_openais_formulas() -> None:
    tokenizer = FakeTokenizer()

    def billed(body: dict[str, Any]) -> int:
        chat = responses_as_chat(body)
        return tokenizer.fixed_tokens(chat, "openai") + sum(
            e.tokens for e in tokenizer.elements(chat, "openai")
        )

    text_only = billed(_body())
    assert billed(_body(_image("image/png", PNG))) - text_only == openai_image_tokens(1200, 800)
    with_pdf = billed(_body(_file(PDF))) - text_only
    assert with_pdf > 2 * OPENAI_PDF_PAGE_IMAGE_TOKENS
    assert with_pdf < 2 * OPENAI_PDF_PAGE_IMAGE_TOKENS + 40  # the two pages' text
