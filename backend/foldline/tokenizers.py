"""The OpenAI tokenizers shipped in the package, and the token counter for a model.

tiktoken normally downloads its BPE rank files on first use. Foldline ships
`o200k_base` and `cl100k_base` inside the package (`foldline/encodings/`) and builds the
encodings from those files, hash-checked, so counting tokens never touches the network:
not on first launch, not offline, not in tests.

This module is the I/O side of token accounting (it reads package data); the formulas
live in `foldline.core.tokens`, which receives an encoder object and stays pure.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from importlib import resources
from typing import Literal

import tiktoken
from tiktoken_ext.openai_public import ENDOFPROMPT, ENDOFTEXT, FIM_MIDDLE, FIM_PREFIX, FIM_SUFFIX

from foldline.core.tokens import (
    AnthropicEstimateCounter,
    OpenAIChatCounter,
    OpenAIResponsesCounter,
    ScaledCounter,
    TokenCounter,
)

EncodingName = Literal["o200k_base", "cl100k_base"]
Wire = Literal["openai", "anthropic", "openai-responses"]

ENCODING_SHA256: dict[EncodingName, str] = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
"""The sha256 that tiktoken's own `tiktoken_ext/openai_public.py` expects for each file."""

# The split patterns and special tokens are those of `tiktoken_ext.openai_public`. They
# are written out here rather than obtained by calling `openai_public.o200k_base()`,
# because that constructor loads its ranks from a URL; tests/test_tokenizers.py checks
# that these values stay identical to tiktoken's definitions.
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_PATTERNS: dict[EncodingName, str] = {"o200k_base": _O200K_PATTERN, "cl100k_base": _CL100K_PATTERN}
_SPECIAL_TOKENS: dict[EncodingName, dict[str, int]] = {
    "o200k_base": {ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
    "cl100k_base": {
        ENDOFTEXT: 100257,
        FIM_PREFIX: 100258,
        FIM_MIDDLE: 100259,
        FIM_SUFFIX: 100260,
        ENDOFPROMPT: 100276,
    },
}


class UnknownEncodingError(ValueError):
    """Raised for an encoding name that is not shipped with the package."""


def _parse_rank_file(data: bytes, name: EncodingName) -> dict[bytes, int]:
    """The mergeable ranks of a `.tiktoken` file, after checking its sha256.

    This is what `tiktoken.load.load_tiktoken_bpe` does, minus its cache: that function
    copies every file it reads into `TIKTOKEN_CACHE_DIR` (a temp dir by default), which
    fails where that directory is not writable and is pointless for a file we ship.
    """
    digest = hashlib.sha256(data).hexdigest()
    if digest != ENCODING_SHA256[name]:
        raise ValueError(
            f"hash mismatch for the shipped {name} encoding: expected "
            f"{ENCODING_SHA256[name]}, got {digest}; the package is damaged, reinstall it"
        )
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@functools.cache
def load_encoding(name: EncodingName) -> tiktoken.Encoding:
    """The `tiktoken.Encoding` built from the shipped, hash-checked rank file.

    The sha256 is verified before parsing, so a corrupted or replaced file fails loudly
    instead of silently miscounting. The result is cached: building o200k_base takes a
    noticeable fraction of a second and the encoding is immutable. Nothing here touches
    the network or writes a file.
    """
    if name not in ENCODING_SHA256:
        raise UnknownEncodingError(f"no shipped encoding named {name!r}")
    rank_file = resources.files("foldline") / "encodings" / f"{name}.tiktoken"
    encoding = tiktoken.Encoding(
        name=name,
        pat_str=_PATTERNS[name],
        mergeable_ranks=_parse_rank_file(rank_file.read_bytes(), name),
        special_tokens=_SPECIAL_TOKENS[name],
    )
    _release_python_ranks(encoding)
    return encoding


def _release_python_ranks(encoding: tiktoken.Encoding) -> None:
    """Let the encoding's Python copy of its ranks go: 15 MB for cl100k_base, 27 MB for
    o200k_base, held for the life of the app otherwise.

    `tiktoken.Encoding` keeps the `bytes -> rank` dict it was built from next to the
    tables its Rust core copied from it. Encoding and decoding use the core only; the
    dict serves pickling and tiktoken's educational module, neither of which Foldline
    uses. The attribute is deleted rather than emptied, so that a tiktoken version
    which did read it while encoding would fail loudly (tests/test_tokenizers.py
    compares counts with an encoding that keeps it) instead of miscounting.
    """
    if hasattr(encoding, "_core_bpe") and isinstance(
        getattr(encoding, "_mergeable_ranks", None), dict
    ):
        del encoding._mergeable_ranks


class OrdinaryTextEncoder:
    """An encoder for `foldline.core.tokens` that treats special-token text as plain text.

    `tiktoken.Encoding.encode` raises on text such as "<|endoftext|>" by default; a user
    pasting that string must not break token counting. `encode_ordinary` is tiktoken's
    documented equivalent of `encode(text, disallowed_special=())`, and it is also what
    the API does with such text in a message: it is tokenized as ordinary characters.
    """

    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self.encoding = encoding
        self.name: str = encoding.name

    def encode(self, text: str) -> list[int]:
        return self.encoding.encode_ordinary(text)

    def __repr__(self) -> str:
        return f"OrdinaryTextEncoder({self.name!r})"


@functools.cache
def get_encoder(name: EncodingName) -> OrdinaryTextEncoder:
    """The shared, cached encoder for one of the shipped encodings."""
    return OrdinaryTextEncoder(load_encoding(name))


# --- model names ------------------------------------------------------------------------

# Order matters: the first matching rule wins, so "gpt-4o" and "gpt-4.1" are matched
# before the generic "gpt-4". Each pattern is anchored at the start of the normalized
# name and must end at a word boundary, so that date suffixes ("gpt-4o-2024-08-06") and
# variants ("gpt-5-mini", "o4-mini-high") match while "gpt-40" or "o3de" do not.
_MODEL_PATTERNS: tuple[tuple[str, EncodingName], ...] = (
    # The gpt-5 family: gpt-5, gpt-5-mini, gpt-5-nano, gpt-5.1, gpt-5-codex, gpt-5.2-pro ...
    (r"^gpt-5(?:\.\d+)?", "o200k_base"),
    (r"^gpt-4\.1", "o200k_base"),
    (r"^gpt-4\.5", "o200k_base"),
    (r"^gpt-4o", "o200k_base"),
    (r"^chatgpt-4o", "o200k_base"),
    # The o-series reasoning models: o1, o1-mini, o1-pro, o3, o3-mini, o4-mini ...
    (r"^o[1-9]", "o200k_base"),
    (r"^codex-mini", "o200k_base"),
    (r"^gpt-4", "cl100k_base"),
    (r"^gpt-3\.5-turbo", "cl100k_base"),
    (r"^gpt-35-turbo", "cl100k_base"),
    (r"^text-embedding-(?:ada-002|3-small|3-large)", "cl100k_base"),
)
_MODEL_RULES: tuple[tuple[re.Pattern[str], EncodingName], ...] = tuple(
    (re.compile(pattern + r"(?:$|[-.:@_])"), encoding) for pattern, encoding in _MODEL_PATTERNS
)


def normalize_model_name(model: str) -> str:
    """The bare model id: lower-case, without a provider prefix or fine-tune wrapper.

    "openai/gpt-4o-2024-08-06" -> "gpt-4o-2024-08-06";
    "ft:gpt-4o-mini-2024-07-18:acme::abc123" -> "gpt-4o-mini-2024-07-18".
    """
    name = model.strip().lower()
    if name.startswith("ft:"):
        name = name[3:].split(":", 1)[0]
    return name.rsplit("/", 1)[-1]


def encoding_name_for_model(model: str) -> EncodingName | None:
    """The OpenAI encoding a model uses, or None when the model is not OpenAI-tokenized.

    Covers the current OpenAI chat models (gpt-5 family, gpt-4.1, gpt-4.5, gpt-4o,
    chatgpt-4o, the o-series), the older gpt-4 / gpt-4-turbo / gpt-3.5-turbo, and the
    text-embedding models. gpt-oss is deliberately not listed: it uses the harmony chat
    format, whose framing the Chat Completions formulas do not describe, and it is
    usually served by a local server with its own chat template.
    """
    name = normalize_model_name(model)
    for pattern, encoding in _MODEL_RULES:
        if pattern.match(name):
            return encoding
    return None


def is_anthropic_model(model: str) -> bool:
    """True for Claude models ("claude-sonnet-4-5", "anthropic/claude-3-5-haiku-latest")."""
    return normalize_model_name(model).startswith("claude-")


# --- counters --------------------------------------------------------------------------

# Claude's tokenizer is not published, so Claude counts are estimated. The base is
# cl100k_base: of the offline candidates it is the closest to Claude. Third-party
# measurements put Claude 3.5+ at roughly 15-30% MORE tokens than o200k_base on the same
# text (more for code), and o200k_base itself produces ~10% fewer tokens than
# cl100k_base on English, so cl100k lands within a few percent for prose and errs low
# mainly on code. A characters/N rule is worse: it is off by 3-4x on CJK text (about one
# token per character) and drifts with code and whitespace. The per-model calibration
# ratio (learned from reported usage) corrects whatever bias remains.
ESTIMATE_BASE_ENCODING: EncodingName = "cl100k_base"


def counter_for(
    model: str,
    wire: Wire,
    calibration_ratio: float = 1.0,
    *,
    exact_allowed: bool = True,
    images: bool = False,
) -> TokenCounter:
    """The token counter for `model` spoken to over `wire`.

    - OpenAI-tokenized model on the OpenAI wire: exact counts (`exact=True`); the
      calibration ratio is ignored because there is nothing to correct.
    - Anthropic wire: the Messages-format estimate over the model's own encoding if it
      has one, else cl100k_base, multiplied by the calibration ratio.
    - Any other model on the OpenAI wire (Ollama, LM Studio, vLLM ...): the Chat
      Completions formula over cl100k_base, multiplied by the calibration ratio; local
      chat templates differ, and the ratio learns the difference.

    `exact_allowed=False` says the server is not OpenAI's own (an OpenAI-compatible
    server may serve a model under an OpenAI-looking name with another tokenizer), so
    even an OpenAI-tokenized name gets an estimate that calibration corrects.
    `images` says the model accepts image input, so images are on the OpenAI wires
    and counted (the Anthropic wire always carries them).
    """
    encoding = encoding_name_for_model(model)
    if wire == "openai":
        # PDFs go as `file` parts only to OpenAI's own API (`exact_allowed`), as the
        # provider sends them; a compatible server gets their text.
        documents = images and exact_allowed
        if encoding is not None and exact_allowed:
            return OpenAIChatCounter(get_encoder(encoding), images=images, documents=documents)
        return ScaledCounter(
            OpenAIChatCounter(
                get_encoder(encoding or ESTIMATE_BASE_ENCODING), images=images, documents=documents
            ),
            calibration_ratio,
        )
    if wire == "openai-responses":
        # No published rendering of Responses items: an estimate over the model's own
        # encoding, which the calibration ratio corrects.
        # Files go as on Chat Completions: images for a model that takes them, PDFs as
        # `input_file` items only to OpenAI's own API.
        encoder = get_encoder(encoding or ESTIMATE_BASE_ENCODING)
        base = OpenAIResponsesCounter(encoder, images=images, documents=images and exact_allowed)
        return ScaledCounter(base, calibration_ratio)
    if wire == "anthropic":
        text_encoder = get_encoder(encoding or ESTIMATE_BASE_ENCODING)
        base = AnthropicEstimateCounter(lambda text: len(text_encoder.encode(text)))
        return ScaledCounter(base, calibration_ratio)
    raise ValueError(f"unknown wire format {wire!r}")
