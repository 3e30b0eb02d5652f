"""The `foldline` command.

`foldline` opens the desktop window (or serves in the browser when there is no
display), `foldline serve` is the headless server, `foldline count-tokens` counts a
request body's input tokens, `foldline doctor` checks and salvages the database. Each
subcommand lives in its own module; this file only parses arguments, so the console
script starts fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from foldline.server.serve_options import DATA_DIR_HELP, add_serve_options


def _add_data_dir_option(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: a subcommand's own option must not overwrite `foldline --data-dir X
    # serve` with its default; either position works.
    parser.add_argument("--data-dir", default=argparse.SUPPRESS, help=DATA_DIR_HELP)


def build_parser() -> argparse.ArgumentParser:
    summary = (__doc__ or "Foldline").splitlines()[0]
    parser = argparse.ArgumentParser(prog="foldline", description=summary)
    parser.add_argument("--data-dir", default=None, help=DATA_DIR_HELP)
    commands = parser.add_subparsers(dest="command")

    serve = commands.add_parser("serve", help="run the server for a browser (no window)")
    add_serve_options(serve, data_dir_default=argparse.SUPPRESS)

    count = commands.add_parser("count-tokens", help="count the input tokens of a request body")
    count.add_argument("--model", required=True, help="model the request is for")
    count.add_argument("file", nargs="?", default="-", help="JSON request body, or - for stdin")

    doctor = commands.add_parser(
        "doctor",
        help="check the database; if damaged, keep a copy and salvage what can be read",
    )
    _add_data_dir_option(doctor)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "count-tokens":
        from foldline.token_cli import run_count_tokens

        return run_count_tokens(args)
    if args.command == "doctor":
        from foldline.doctor_cli import run_doctor

        return run_doctor(args)
    if args.command == "serve":
        from foldline.server.launch import run_serve

        return run_serve(args)
    from foldline_desktop.app import run_desktop

    return run_desktop(args)


if __name__ == "__main__":
    sys.exit(main())
