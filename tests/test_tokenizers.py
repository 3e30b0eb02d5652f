"""The shipped encodings: loaded offline and hash-checked; model names; counter_for."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.load
import tiktoken_ext.openai_public as openai_public

from foldline import tokenizers
from foldline.core.messages import user
from foldline.core.tokens import AnthropicEstimateCounter, OpenAIChatCounter, ScaledCounter
from foldline.tokenizers import (
    ENCODING_SHA256,
    counter_for,
    encoding_name_for_model,
    get_encoder,
    is_anthropic_model,
    load_encoding,
    normalize_model_name,
)

SHIPPED = ["o200k_base", "cl100k_base"]


@pytest.fixture
def fresh_caches() -> Any:
    """Forget loaded encodings so the test observes a real load; restore afterwards."""
    load_encoding.cache_clear()
    get_encoder.cache_clear()
    yield
    load_encoding.cache_clear()
    get_encoder.cache_clear()


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """Make every network path explode, and give tiktoken an empty cache directory."""
    attempts: list[str] = []
    real_read_file = tiktoken.load.read_file

    def guarded_read_file(blobpath: str) -> bytes:
        if "://" in blobpath:
            attempts.append(blobpath)
            raise AssertionError(f"tiktoken tried to fetch {blobpath}")
        return real_read_file(blobpath)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(repr(args))
        raise AssertionError("network access attempted")

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(tiktoken.load, "read_file", guarded_read_file)
    monkeypatch.setattr("requests.get", refuse)
    monkeypatch.setattr("requests.Session.request", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return attempts


@pytest.mark.parametrize("name", SHIPPED)
def test_encodings_load_without_network(
    name: str, fresh_caches: None, no_network: list[str]
) -> None:
    encoder = get_encoder(name)  # type: ignore[arg-type]
    assert encoder.encode("hello world")
    assert no_network == []


# Token ids printed in the OpenAI Cookbook ("How to count tokens with tiktoken", section 5).
COOKBOOK_IDS = {
    "cl100k_base": [33334, 45918, 243, 21990, 9080, 33334, 62004, 16556, 78699],
    "o200k_base": [8930, 9697, 243, 128225, 8930, 17693, 4344, 48669],
}


@pytest.mark.parametrize("name", SHIPPED)
def test_encodings_match_published_token_ids(name: str) -> None:
    assert get_encoder(name).encode("お誕生日おめでとう") == COOKBOOK_IDS[name]  # type: ignore[arg-type]


@pytest.mark.parametrize("name", SHIPPED)
def test_pattern_and_special_tokens_match_tiktoken(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen_hashes: list[str] = []

    def fake_load(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        seen_hashes.append(str(expected_hash))
        return {}

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", fake_load)
    reference = openai_public.ENCODING_CONSTRUCTORS[name]()
    ours = load_encoding(name)  # type: ignore[arg-type]
    assert ours._pat_str == reference["pat_str"]
    assert ours._special_tokens == reference["special_tokens"]
    assert seen_hashes == [ENCODING_SHA256[name]]  # type: ignore[index]


def test_corrupted_rank_file_is_refused(
    fresh_caches: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    package = tmp_path / "foldline"
    (package / "encodings").mkdir(parents=True)
    source = Path(tokenizers.__file__).parent / "encodings" / "cl100k_base.tiktoken"
    target = package / "encodings" / "cl100k_base.tiktoken"
    shutil.copyfile(source, target)
    with target.open("ab") as f:
        f.write(b"IQ== 999999\n")  # one extra rank: same format, different hash

    class FakeResources:
        @staticmethod
        def files(anchor: str) -> Path:
            return package

        @staticmethod
        def as_file(path: Path) -> Any:
            import contextlib

            return contextlib.nullcontext(path)

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(tokenizers, "resources", FakeResources)
    with pytest.raises(ValueError, match=r"[Hh]ash"):
        load_encoding("cl100k_base")


def test_unknown_encoding_name_is_refused() -> None:
    with pytest.raises(ValueError):
        load_encoding("p50k_base")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    ["<|endoftext|>", "a <|fim_prefix|> b <|endofprompt|>", "plain text", "🦊 emoji", ""],
)
@pytest.mark.parametrize("name", SHIPPED)
def test_encoder_treats_special_tokens_as_text(name: str, text: str) -> None:
    encoding = load_encoding(name)  # type: ignore[arg-type]
    assert get_encoder(name).encode(text) == encoding.encode(text, disallowed_special=())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-5", "o200k_base"),
        ("gpt-5-mini", "o200k_base"),
        ("gpt-5-nano", "o200k_base"),
        ("gpt-5.1", "o200k_base"),
        ("gpt-5.1-codex-max", "o200k_base"),
        ("gpt-5-codex", "o200k_base"),
        ("gpt-5-2025-08-07", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("gpt-4.1-mini-2025-04-14", "o200k_base"),
        ("gpt-4.5-preview", "o200k_base"),
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("gpt-4o-2024-08-06", "o200k_base"),
        ("openai/gpt-4o-2024-08-06", "o200k_base"),
        ("GPT-4o", "o200k_base"),
        ("chatgpt-4o-latest", "o200k_base"),
        ("o1", "o200k_base"),
        ("o1-mini", "o200k_base"),
        ("o1-pro", "o200k_base"),
        ("o3", "o200k_base"),
        ("o3-mini-2025-01-31", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("ft:gpt-4o-mini-2024-07-18:acme::abc123", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-0613", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-4-turbo-2024-04-09", "cl100k_base"),
        ("gpt-4-32k", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("gpt-3.5-turbo-0125", "cl100k_base"),
        ("azure/gpt-35-turbo", "cl100k_base"),
        ("text-embedding-3-small", "cl100k_base"),
        ("text-embedding-ada-002", "cl100k_base"),
        ("claude-sonnet-4-5", None),
        ("llama3.1:8b", None),
        ("gpt-oss-20b", None),
        ("gpt-40", None),
        ("o3de", None),
        ("", None),
    ],
)
def test_encoding_name_for_model(model: str, expected: str | None) -> None:
    assert encoding_name_for_model(model) == expected


def test_normalize_model_name() -> None:
    assert normalize_model_name(" OpenAI/GPT-4o ") == "gpt-4o"
    assert normalize_model_name("ft:gpt-4o:org::id") == "gpt-4o"


def test_is_anthropic_model() -> None:
    assert is_anthropic_model("claude-opus-4-1")
    assert is_anthropic_model("anthropic/claude-3-5-haiku-latest")
    assert not is_anthropic_model("gpt-4o")


def test_counter_for_openai_model_on_openai_wire_is_exact() -> None:
    counter = counter_for("gpt-4o", "openai", calibration_ratio=2.0)
    assert isinstance(counter, OpenAIChatCounter)
    assert counter.exact
    assert counter.encoder is get_encoder("o200k_base")
    # The ratio is ignored for exact counts: {"role": "user", "content": "hello"} = 5.
    assert counter.count_message(user("hello")) == 5


def test_counter_for_claude_is_a_calibrated_estimate() -> None:
    plain = counter_for("claude-sonnet-4-5", "anthropic")
    scaled = counter_for("claude-sonnet-4-5", "anthropic", calibration_ratio=2.0)
    assert isinstance(plain, ScaledCounter)
    assert isinstance(plain.base, AnthropicEstimateCounter)
    assert not plain.exact and not scaled.exact
    message = user("The quick brown fox jumps over the lazy dog, twice over.")
    assert scaled.count_message(message) == 2 * plain.count_message(message)


def test_counter_for_local_model_on_openai_wire_is_an_estimate() -> None:
    counter = counter_for("llama3.1:8b", "openai", calibration_ratio=1.5)
    assert isinstance(counter, ScaledCounter)
    assert not counter.exact
    exact = OpenAIChatCounter(get_encoder("cl100k_base"))
    message = user("hello there")
    assert counter.count_message(message) == int(exact.count_message(message) * 1.5 + 0.5)


def test_counter_for_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        counter_for("claude-sonnet-4-5", "anthropic", calibration_ratio=0.0)
    with pytest.raises(ValueError):
        counter_for("gpt-4o", "grpc")  # type: ignore[arg-type]


def test_loading_writes_no_cache_file(
    fresh_caches: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # tiktoken's own loader copies every file it reads into this directory; ours must not
    # (it may be unwritable, and the file is shipped anyway).
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    encoding = load_encoding("o200k_base")
    assert encoding.encode_ordinary("hello world") == [24912, 2375]
    assert list(cache.iterdir()) == []


# Text that exercises every path of the BPE: special tokens written as text, unicode of
# several scripts, emoji (multi-byte merges), code, long whitespace and digit runs.
COUNTING_CORPUS = [
    "",
    "hello world",
    "<|endoftext|>",
    "a <|fim_prefix|> b <|fim_middle|> c <|fim_suffix|> d <|endofprompt|>",
    "お誕生日おめでとう 生日快乐 생일 축하해 С днём рождения عيد ميلاد سعيد",
    "🦊🦊 emoji 👩‍👩‍👧‍👦 and flags 🇫🇷🇯🇵",
    "def f(x: int) -> int:\n    return x ** 2  # squares\n\n\n\tif x != 0: pass\n",
    " " * 50 + "\n" * 7 + "\t\t end",
    "1234567890 3.14159 1e-10 0xdeadbeef",
    "Don't you'll they're I'VE WE'LL",
    "\u00e9\u0301 \u200b zero-width \ufeff bom",
    "x" * 3000,
]


@pytest.mark.parametrize("name", SHIPPED)
def test_encoding_without_its_python_ranks_counts_as_tiktoken_does(
    name: str, fresh_caches: None
) -> None:
    """The encoding Foldline keeps dropped tiktoken's Python dict of ranks (memory); its
    counts must be those of an encoding built the usual way, which keeps it."""
    rank_file = Path(tokenizers.__file__).parent / "encodings" / f"{name}.tiktoken"
    kept = tiktoken.Encoding(
        name=name,
        pat_str=tokenizers._PATTERNS[name],  # type: ignore[index]
        mergeable_ranks=tokenizers._parse_rank_file(rank_file.read_bytes(), name),
        special_tokens=tokenizers._SPECIAL_TOKENS[name],  # type: ignore[index]
    )
    released = load_encoding(name)  # type: ignore[arg-type]
    assert not hasattr(released, "_mergeable_ranks")
    assert hasattr(kept, "_mergeable_ranks")
    for text in COUNTING_CORPUS:
        expected = kept.encode_ordinary(text)
        assert get_encoder(name).encode(text) == expected  # type: ignore[arg-type]
        assert released.encode_ordinary(text) == expected
        assert released.encode(text, allowed_special="all") == kept.encode(
            text, allowed_special="all"
        )
        assert released.decode(expected) == text
