"""`foldline count-tokens`: in-process through `cli.main`, and as the real console script."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from foldline.cli import main
from foldline.core.tokens import ANTHROPIC_IMAGE_TOKENS

_COOKBOOK = json.loads((Path(__file__).parent / "data" / "openai_cookbook_tools.json").read_text())
COOKBOOK_BODY: dict[str, Any] = {
    "model": "gpt-4o",
    "messages": _COOKBOOK["messages"],
    "tools": _COOKBOOK["tools"],
}

CLAUDE_BODY: dict[str, Any] = {
    "system": "You are terse.",
    "messages": [
        {"role": "user", "content": "Hello, world"},
        {"role": "assistant", "content": [{"type": "text", "text": "Hi."}]},
        {"role": "user", "content": "Count me."},
    ],
}


def run(
    argv: list[str], capsys: pytest.CaptureFixture[str], stdin: str | bytes | None = None
) -> tuple[int, str, str]:
    if stdin is not None:
        data = stdin.encode() if isinstance(stdin, str) else stdin
        sys.stdin = io.TextIOWrapper(io.BytesIO(data))
    try:
        code = main(argv)
    finally:
        sys.stdin = sys.__stdin__
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, body: Any, name: str = "body.json") -> str:
    path = tmp_path / name
    path.write_text(body if isinstance(body, str) else json.dumps(body), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("model", "expected"), [("gpt-4o", 101), ("gpt-4-0613", 105)])
def test_exact_count_of_the_cookbook_tools_example(
    model: str, expected: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["count-tokens", "--model", model, write(tmp_path, COOKBOOK_BODY)], capsys)
    assert (code, out, err) == (0, f"{expected}\n", "")


def test_reads_stdin(capsys: pytest.CaptureFixture[str]) -> None:
    body = json.dumps({"messages": [{"role": "user", "content": "hello"}]})
    assert run(["count-tokens", "--model", "gpt-3.5-turbo", "-"], capsys, stdin=body) == (
        0,
        "8\n",
        "",
    )


def test_stdin_is_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    body = json.dumps({"messages": [{"role": "user", "content": "hello"}]})
    assert run(["count-tokens", "--model", "gpt-4"], capsys, stdin=body)[:2] == (0, "8\n")


def test_claude_counts_are_marked_as_estimates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        ["count-tokens", "--model", "claude-sonnet-4-5", write(tmp_path, CLAUDE_BODY)], capsys
    )
    assert code == 0
    assert int(out) > 10
    assert out.strip().isdigit()
    assert err == "estimate\n"


def test_images_make_an_openai_count_an_estimate(capsys: pytest.CaptureFixture[str]) -> None:
    body = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is this?"},
                    {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
                ],
            }
        ]
    }
    code, out, err = run(["count-tokens", "--model", "gpt-4o"], capsys, stdin=json.dumps(body))
    assert code == 0 and int(out) > 500
    assert err == "estimate\n"


def test_claude_image_has_its_fixed_cost(capsys: pytest.CaptureFixture[str]) -> None:
    def body(content: list[dict[str, Any]]) -> str:
        return json.dumps({"messages": [{"role": "user", "content": content}]})

    text = [{"type": "text", "text": "look"}]
    image = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ""}}]
    _, without, _ = run(["count-tokens", "--model", "claude-opus-4-1"], capsys, stdin=body(text))
    _, with_image, _ = run(
        ["count-tokens", "--model", "claude-opus-4-1"], capsys, stdin=body(text + image)
    )
    assert int(with_image) - int(without) == ANTHROPIC_IMAGE_TOKENS


@pytest.mark.parametrize(
    ("model", "stdin", "message"),
    [
        ("gpt-4o", '{"messages": [', "malformed JSON"),
        ("gpt-4o", b"\xff\xfe\x00", "not UTF-8"),
        ("gpt-4o", "[1, 2]", "Chat Completions body"),
        ("gpt-4o", '{"prompt": "hi"}', "`messages` must be a list"),
        ("gpt-4o", '{"messages": [{"role": "robot", "content": "x"}]}', "role 'robot'"),
        ("gpt-4o", '{"messages": [{"role": "user", "content": 5}]}', "content must be"),
        (
            "claude-sonnet-4-5",
            '{"messages": [{"role": "system", "content": "x"}]}',
            "only user and assistant",
        ),
        ("claude-sonnet-4-5", '{"messages": [], "system": 3}', "`system` must be"),
        ("claude-sonnet-4-5", '{"messages": [], "tools": [{"x": 1}]}', "tools[0] has no name"),
        ("llama3.1:8b", '{"messages": []}', "unknown model 'llama3.1:8b'"),
    ],
)
def test_bad_input_is_a_one_line_error_with_exit_code_2(
    model: str, stdin: str | bytes, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["count-tokens", "--model", model], capsys, stdin=stdin)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("foldline count-tokens: error:")
    assert message in err


def test_unreadable_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["count-tokens", "--model", "gpt-4o", str(tmp_path / "nope.json")], capsys)
    assert (code, out) == (2, "")
    assert "cannot read" in err and err.count("\n") == 1


def test_odd_values_deep_in_a_body_do_not_raise(capsys: pytest.CaptureFixture[str]) -> None:
    body = {"messages": [{"role": "assistant", "content": None, "tool_calls": 7}]}
    code, out, _ = run(["count-tokens", "--model", "gpt-4o"], capsys, stdin=json.dumps(body))
    assert code == 0 and int(out) > 0


# --- the real console script -------------------------------------------------------------

CONSOLE_SCRIPT = Path(sys.executable).parent / "foldline"


def console(args: list[str], stdin: str) -> subprocess.CompletedProcess[str]:
    command = (
        [str(CONSOLE_SCRIPT)] if CONSOLE_SCRIPT.exists() else [sys.executable, "-m", "foldline.cli"]
    )
    return subprocess.run(
        [*command, *args], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def test_console_script_counts_exactly() -> None:
    result = console(
        ["count-tokens", "--model", "openai/gpt-4o-2024-08-06"], json.dumps(COOKBOOK_BODY)
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "101\n", "")


def test_console_script_marks_estimates() -> None:
    result = console(["count-tokens", "--model", "claude-haiku-4-5"], json.dumps(CLAUDE_BODY))
    assert result.returncode == 0
    assert result.stdout.strip().isdigit()
    assert result.stderr == "estimate\n"


def test_console_script_error_has_no_traceback() -> None:
    result = console(["count-tokens", "--model", "gpt-4o"], "{not json")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1


def test_module_entry_point_works_too() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "foldline.cli", "count-tokens", "--model", "gpt-4"],
        input=json.dumps({"messages": [{"role": "user", "content": "hello"}]}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stdout) == (0, "8\n")
