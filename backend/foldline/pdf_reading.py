"""A PDF read in a process of its own, bounded in time and memory, and stoppable.

pypdf is pure Python: a small hostile PDF (a content stream that inflates to gigabytes of
text, a hundred thousand pages, a page tree nested thousands deep) can keep it busy for
minutes and take gigabytes, and a thread running it can neither be stopped nor limited.
So every PDF a person, a project or an MCP server hands over is read by a child process
(`python -m foldline.pdf_reading`): the bytes go in on stdin, one JSON line comes out.
The child limits its own address space and CPU time, counts pages while it walks the page
tree and text while it extracts it (it stops at the caps instead of reading on), and
sums pypdf's warnings into one count instead of writing each to the log. The parent waits
at most `PDF_READ_SECONDS` and kills the child on time-out or when the waiting task is
cancelled (Stop).

`parse_pdf` is the reading itself, also callable in-process for tests of the caps.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from foldline.core.attachments import MAX_PDF_PAGES, MAX_PDF_TEXT_CHARS, AttachmentRefused

log = logging.getLogger("foldline.pdf_reading")

PDF_READ_SECONDS = 30.0
"""How long a PDF may take to read, wall time; a slower one is refused."""

PDF_MEMORY_BYTES = 1024 * 1024 * 1024
"""The child's address-space limit: a PDF that needs more to read is refused."""

MAX_PAGE_CONTENT_BYTES = 16 * 1024 * 1024
"""A page whose content streams decode to more is counted but its text not read: pypdf
parses content in Python, and a few kB of compressed stream shown many times can make
tens of megabytes that take minutes to parse."""

MAX_PAGE_TREE_NODES = 20_000
"""More nodes read in the page tree (pages, /Pages nodes, dangling references) than this
before `MAX_PDF_PAGES` pages are found: refused as too large to read."""

MAX_PAGE_TREE_DEPTH = 64
"""Deeper page trees are refused while walked (real ones are a few levels deep)."""


_REAPING: set[asyncio.Task[int]] = set()
"""Killed children being waited for (a task needs a reference to run to its end)."""


class PdfTooSlow(AttachmentRefused):
    """The PDF was not read within the time limit."""


@dataclass(frozen=True)
class PdfText:
    pages: int
    text: str
    warnings: int = 0
    peak_rss_kib: int = 0
    """The reading process's peak resident memory (for benchmarks and logs)."""


class _TextCapReached(Exception):
    pass


def _count_pages(reader: Any, name: str) -> int:
    """The page count from a bounded walk of the page tree: it stops past
    `MAX_PDF_PAGES` leaves, and refuses a tree past `MAX_PAGE_TREE_DEPTH` levels, past
    `MAX_PAGE_TREE_NODES` nodes or with a cycle, instead of flattening the whole tree
    first as pypdf does."""
    from pypdf.generic import DictionaryObject

    root = reader.trailer["/Root"].get_object()["/Pages"].get_object()
    seen: set[int] = set()
    visited = 0
    count = 0
    stack: list[tuple[Any, int]] = [(root, 0)]
    while stack:
        reference, depth = stack.pop()
        node = reference.get_object() if reference is not None else None
        visited += 1
        if visited > MAX_PAGE_TREE_NODES:
            raise AttachmentRefused(f"{name}: the PDF's page tree is too large to read")
        if depth > MAX_PAGE_TREE_DEPTH:
            raise AttachmentRefused(f"{name}: the PDF's page tree is nested too deep to read")
        if not isinstance(node, DictionaryObject):
            continue  # a dangling reference (pypdf warns): no page
        if id(node) in seen:
            raise AttachmentRefused(f"{name}: the PDF's page tree loops back on itself")
        seen.add(id(node))
        if "/Kids" in node:
            # Resolved when popped: a node with 100,000 kids reads only as many as it
            # takes to pass the page limit.
            kids = node["/Kids"].get_object()
            if isinstance(kids, list):  # anything else holds no pages
                stack.extend((kid, depth + 1) for kid in reversed(kids))
        else:
            count += 1
            if count > MAX_PDF_PAGES:
                return count
    return count


def parse_pdf(name: str, data: bytes) -> PdfText:
    """The page count and the text of every page (each headed by `[page N]`), read with
    the caps applied as it goes. A PDF over `MAX_PDF_PAGES` comes back with no text (the
    page limit refuses it); one whose text passes `MAX_PDF_TEXT_CHARS` is refused."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    warnings = _WarningCount()
    try:
        with warnings.collecting():
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                raise AttachmentRefused(f"{name}: the PDF is password-protected")
            pages = _count_pages(reader, name)
            if pages > MAX_PDF_PAGES:
                return PdfText(pages=pages, text="", warnings=warnings.count)
            if pages == 0:
                raise AttachmentRefused(f"{name}: the PDF has no pages")
            texts = _page_texts(reader, name)
    except AttachmentRefused:
        raise
    except _TextCapReached:
        raise AttachmentRefused(
            f"{name}: the PDF's text is over the {MAX_PDF_TEXT_CHARS:,} characters a PDF may hold"
        ) from None
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, OSError):
        raise AttachmentRefused(f"{name}: the PDF is damaged and cannot be read") from None
    except (RecursionError, MemoryError):
        raise AttachmentRefused(f"{name}: the PDF is too complex to read") from None
    text = "\n\n".join(
        f"[page {number}]\n{text.strip()}" for number, text in enumerate(texts, start=1)
    )
    return PdfText(pages=len(texts), text=text, warnings=warnings.count)


def _page_texts(reader: Any, name: str) -> list[str]:
    total = 0

    def counted(text: str, *_args: Any) -> None:
        # Called for every piece of text as pypdf shows it: the cap holds while a page
        # is read, not only after a page that inflated to gigabytes.
        nonlocal total
        total += len(text)
        if total > MAX_PDF_TEXT_CHARS:
            raise _TextCapReached

    texts = []
    for page in reader.pages:
        if _content_bytes(page) > MAX_PAGE_CONTENT_BYTES:
            # pypdf parses a page's content in Python: tens of megabytes take minutes.
            # The page counts; its text is not read.
            texts.append("")
            continue
        try:
            texts.append(page.extract_text(visitor_text=counted) or "")
        except _TextCapReached:
            raise
        except (RecursionError, MemoryError):
            raise
        except Exception:  # a page pypdf cannot read still counts as a page
            texts.append("")
    return texts


def _content_bytes(page: Any) -> int:
    """The size of a page's content streams once decoded (a stream shown many times
    counts each time), without parsing them."""
    contents = page.get("/Contents")
    if contents is None:
        return 0
    contents = contents.get_object()
    streams = contents if isinstance(contents, list) else [contents]
    total = 0
    for stream in streams:
        stream = stream.get_object()
        data = stream.get_data() if hasattr(stream, "get_data") else b""
        total += len(data)
        if total > MAX_PAGE_CONTENT_BYTES:
            break
    return total


class _WarningCount(logging.Handler):
    """pypdf's warnings counted, not written: one hostile PDF can raise thousands."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1

    @contextlib.contextmanager
    def collecting(self) -> Iterator[None]:
        pypdf_log = logging.getLogger("pypdf")
        propagate = pypdf_log.propagate
        pypdf_log.addHandler(self)
        pypdf_log.propagate = False
        try:
            yield
        finally:
            pypdf_log.removeHandler(self)
            pypdf_log.propagate = propagate


# The child process.


def _limit_self() -> None:
    try:
        import resource
    except ImportError:  # Windows: the parent's time limit still holds
        return
    resource.setrlimit(resource.RLIMIT_AS, (PDF_MEMORY_BYTES, PDF_MEMORY_BYTES))
    cpu = int(PDF_READ_SECONDS) + 5
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))


def _peak_rss_kib() -> int:
    try:
        import resource
    except ImportError:
        return 0
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "file"
    data = sys.stdin.buffer.read()
    _limit_self()
    try:
        result = parse_pdf(name, data)
        answer: dict[str, Any] = {
            "pages": result.pages,
            "text": result.text,
            "warnings": result.warnings,
        }
    except AttachmentRefused as refusal:
        answer = {"refused": str(refusal)}
    except MemoryError:
        answer = {"refused": f"{name}: the PDF needs too much memory to read"}
    answer["peakRssKib"] = _peak_rss_kib()
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()


# The parent.


def _command(name: str) -> list[str]:
    return [sys.executable, "-m", "foldline.pdf_reading", name]


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    # The child imports foldline from where this process did, installed or not.
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
    return env


def _answer(name: str, returncode: int | None, stdout: bytes, started: float) -> PdfText:
    try:
        answer = json.loads(stdout) if stdout else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        # Killed by its own limits (memory, CPU) before it could answer.
        log.warning("reading the PDF %s ended with code %s and no answer", name, returncode)
        raise AttachmentRefused(f"{name}: the PDF needs too much memory or time to read")
    if "refused" in answer:
        raise AttachmentRefused(str(answer["refused"]))
    result = PdfText(
        pages=int(answer["pages"]),
        text=str(answer["text"]),
        warnings=int(answer.get("warnings", 0)),
        peak_rss_kib=int(answer.get("peakRssKib", 0)),
    )
    if result.warnings:
        log.info("pypdf gave %d warnings reading %s", result.warnings, name)
    log.debug("read %s in %.2f s", name, time.monotonic() - started)
    return result


def _too_slow(name: str) -> PdfTooSlow:
    return PdfTooSlow(f"{name}: the PDF takes over {PDF_READ_SECONDS:.0f} s to read")


def read_pdf_isolated(name: str, data: bytes) -> PdfText:
    """Read a PDF in a child process (for code that runs in a thread)."""
    started = time.monotonic()
    try:
        done = subprocess.run(
            _command(name),
            input=data,
            capture_output=True,
            timeout=PDF_READ_SECONDS,
            env=_child_env(),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise _too_slow(name) from None
    return _answer(name, done.returncode, done.stdout, started)


FEED_BYTES = 256 * 1024
"""The PDF goes to the child this much at a time: handing the pipe 16 MB at once copied
them into its buffer in one step of the event loop (20 ms)."""


async def _exchange(child: asyncio.subprocess.Process, data: bytes) -> bytes:
    """`child.communicate(data)`'s output, with the input written a slice at a time."""
    assert child.stdin is not None and child.stdout is not None
    stdin = child.stdin

    async def feed() -> None:
        view = memoryview(data)
        try:
            for start in range(0, len(data), FEED_BYTES):
                stdin.write(view[start : start + FEED_BYTES])
                await stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the child stopped reading (refused or killed): its answer says why
        finally:
            stdin.close()

    _, stdout = await asyncio.gather(feed(), child.stdout.read())
    await child.wait()
    return stdout


async def read_pdf_isolated_async(name: str, data: bytes) -> PdfText:
    """Read a PDF in a child process without holding the event loop; cancelling the
    awaiting task (Stop) kills the child at once."""
    started = time.monotonic()
    child = await asyncio.create_subprocess_exec(
        *_command(name),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=_child_env(),
    )
    try:
        stdout = await asyncio.wait_for(_exchange(child, data), PDF_READ_SECONDS)
    except TimeoutError:
        raise _too_slow(name) from None
    finally:
        if child.returncode is None:
            child.kill()
            # Reaped in the background: a cancelled task must not wait here.
            reaping = asyncio.get_running_loop().create_task(child.wait())
            _REAPING.add(reaping)
            reaping.add_done_callback(_REAPING.discard)
    return _answer(name, child.returncode, stdout, started)


if __name__ == "__main__":
    main()
