"""What the desktop window costs in memory at rest, with a long conversation open.

Starts the real `foldline` console script under Xvfb (1280x800) on a data dir holding
one conversation of 2,000 messages (the mix of `ui_bench.py`), remembered as the last
one open so that the window opens on it; waits until its newest page was served, lets
the window rest, then reads every process of the window (the app and its Qt WebEngine
children) from `/proc/PID/smaps_rollup`: RSS, and PSS (each shared page divided among
the processes that map it, so the processes' PSS add up to what the window costs).

    .venv/bin/python benchmarks/memory_bench.py --messages 2000 --rest 15 --runs 3

Other programs mapping Qt WebEngine's libraries (another Foldline window, a desktop test)
lower the window's PSS while they run; each run says how many there were.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from startup_bench import FOLDLINE, _free_port, _wait
from ui_bench import CONFIG, seed

from foldline_desktop.instance import ControlError, read_instance_record, send_command
from foldline_desktop.xvfb import VirtualDisplay, list_windows, request_close


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            listed = (task / "children").read_text().split()
        except OSError:
            continue
        for child in map(int, listed):
            found += [child, *children(child)]
    return found


def process_type(pid: int) -> str:
    command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return next((part.decode() for part in command if part.startswith(b"--type=")), "")


def parent(pid: int) -> int:
    # The fields after the command name, which is in parentheses and may hold spaces.
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def memory(pid: int) -> dict[str, Any]:
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value, *_ = line.split()
        fields[name.rstrip(":")] = int(value) / 1024
    command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    kind = process_type(pid)
    if kind == "--type=zygote" and process_type(parent(pid)) == "--type=zygote":
        # Renderers are forked from a zygote and keep its command line.
        kind = "renderer (forked from a zygote)"
    name = Path(command[0].decode()).name
    return {
        "pid": pid,
        "process": f"{name} {kind}".strip(),
        "rss": fields["Rss"],
        "pss": fields["Pss"],
        "anon": fields.get("Pss_Anon", 0.0),
        "file": fields.get("Pss_File", 0.0),
    }


def conversation_shown(data_dir: Path, conversation_id: str) -> bool:
    record = read_instance_record(data_dir, wait_seconds=0)
    if record is None:
        return False
    try:
        status: Any = send_command(record, "status", timeout=2)
    except ControlError:
        return False
    return status["loaded"] and any(
        f"/api/conversations/{conversation_id}/messages" in seen["path"]
        for seen in status["requests"]
    )


def others_mapping_qt(own: set[int]) -> int:
    """Processes outside the window that map Qt WebEngine's library: each one lowers the
    window's PSS, since the library's pages are then divided among more processes."""
    count = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in own:
            continue
        try:
            if "libQt6WebEngineCore" in (entry / "maps").read_text():
                count += 1
        except OSError:
            continue
    return count


def measure_once(
    messages: int, rest: float, user: str | None = None
) -> tuple[float, list[dict[str, Any]], int]:
    """One launch: seconds until the newest page was served, each process' memory, and
    how many processes outside the window mapped Qt WebEngine meanwhile."""
    with (
        tempfile.TemporaryDirectory(prefix="foldline-memory-") as folder,
        VirtualDisplay() as display,
    ):
        data_dir = Path(folder)
        (data_dir / "config.toml").write_text(CONFIG, encoding="utf-8")
        conversation_id, _leaf = seed(data_dir, messages)
        port = _free_port()
        (data_dir / "window.json").write_text(
            json.dumps({"last_port": port, "last_conversation_id": conversation_id})
        )
        environ = {k: v for k, v in os.environ.items() if k != "WAYLAND_DISPLAY"}
        environ["DISPLAY"] = display.name
        command = [str(FOLDLINE), "--data-dir", str(data_dir)]
        if user is not None:
            # Not root, so Chromium keeps its sandbox (and its separate renderer).
            os.chmod(folder, 0o755)
            account = pwd.getpwnam(user)
            subprocess.run(
                ["chown", "-R", f"{account.pw_uid}:{account.pw_gid}", str(data_dir)], check=True
            )
            environ["HOME"] = str(data_dir)
            command = [
                "setpriv",
                f"--reuid={account.pw_uid}",
                f"--regid={account.pw_gid}",
                "--clear-groups",
                *command,
            ]
        started = time.monotonic()
        process = subprocess.Popen(
            command,
            env=environ,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            shown = _wait(lambda: conversation_shown(data_dir, conversation_id), "page", started)
            time.sleep(rest)
            pids = [process.pid, *children(process.pid)]
            rows = [memory(pid) for pid in pids]
            others = others_mapping_qt(set(pids))
            window = next(w for w in list_windows(display.name) if w.title == "Foldline")
            request_close(display.name, window.window_id)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                print("the window did not close within 30 s; killed", file=sys.stderr)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    return shown, rows, others


def print_rows(rows: list[dict[str, Any]]) -> float:
    print(f"{'process':34s} {'RSS MB':>8s} {'PSS MB':>8s} {'anon':>8s} {'files':>8s}")
    for row in rows:
        print(
            f"{row['process'][:34]:34s} {row['rss']:8.0f} {row['pss']:8.0f} "
            f"{row['anon']:8.0f} {row['file']:8.0f}"
        )
    total = {key: sum(row[key] for row in rows) for key in ("rss", "pss", "anon", "file")}
    print(
        f"{'total':34s} {total['rss']:8.0f} {total['pss']:8.0f} "
        f"{total['anon']:8.0f} {total['file']:8.0f}"
    )
    return total["pss"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--rest", type=float, default=15.0, help="seconds at rest before reading")
    parser.add_argument("--runs", type=int, default=1, help="launches; the median is reported")
    parser.add_argument("--as-user", help="launch as this (non-root) user; needs root")
    args = parser.parse_args()
    print(
        f"{args.messages:,} messages open, {args.rest:g} s at rest, load average "
        f"{os.getloadavg()[0]:.1f}; flags: {os.environ.get('QTWEBENGINE_CHROMIUM_FLAGS', '')!r}"
    )
    totals = []
    for run in range(args.runs):
        shown, rows, others = measure_once(args.messages, args.rest, args.as_user)
        print(
            f"run {run + 1}: newest page served after {shown:.1f} s; "
            f"{others} other processes mapped Qt WebEngine"
        )
        totals.append(print_rows(rows))
    print(
        f"total PSS, median of {len(totals)}: {statistics.median(totals):.0f} MB "
        f"({', '.join(f'{total:.0f}' for total in totals)})"
    )


if __name__ == "__main__":
    main()
