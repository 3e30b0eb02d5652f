"""The options of `foldline serve`, shared by the command line and the desktop shell.

The desktop shell falls back to serving in the browser when there is no display and must
then behave exactly as `foldline serve` with its defaults; both build the options here, so
the shell needs nothing from `foldline.cli`, which sits above it and starts it. Nothing
heavy is imported, so the console script still starts fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_serve_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to bind (default: a free one)")
    parser.add_argument("--data-dir", default=None, help="where conversations and config live")
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a non-loopback --host (anyone who can reach it and has the token can chat)",
    )


def default_serve_options(data_dir: Path) -> argparse.Namespace:
    """The options of `foldline serve --data-dir DATA_DIR`, every other one at its default."""
    parser = argparse.ArgumentParser(prog="foldline serve")
    add_serve_options(parser)
    return parser.parse_args(["--data-dir", str(data_dir)])
