"""The `foldline` command.

`foldline` opens the desktop window (or serves in the browser when there is no
display), `foldline serve` is the headless server, `foldline count-tokens` counts a
request body's input tokens. Each subcommand lives in its own module; this file only
parses arguments, so the console script starts fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from foldline.server.serve_options import add_serve_options


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="foldline", description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="where conversations and config live")
    commands = parser.add_subparsers(dest="command")

    serve = commands.add_parser("serve", help="run the server for a browser (no window)")
    add_serve_options(serve)

    count = commands.add_parser("count-tokens", help="count the input tokens of a request body")
    count.add_argument("--model", required=True, help="model the request is for")
    count.add_argument("file", nargs="?", default="-", help="JSON request body, or - for stdin")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "count-tokens":
        from foldline.token_cli import run_count_tokens

        return run_count_tokens(args)
    if args.command == "serve":
        from foldline.server.launch import run_serve

        return run_serve(args)
    from foldline_desktop.app import run_desktop

    return run_desktop(args)


if __name__ == "__main__":
    sys.exit(main())
