"""The stdio transport to an MCP server, with a limit on one message while it is read.

The SDK's `stdio_client` reads the server's stdout as text and joins every chunk to the
line read so far, with no limit: a server that prints one endless line (by mistake or on
purpose) grows the app's memory until the machine gives out, and the joining is
quadratic, so even a 60 MB answer takes longer than a call's timeout. This transport is
the SDK's, with the reader replaced: the line is gathered as bytes, a message larger
than `MAX_MESSAGE_BYTES` is refused as soon as the limit is crossed (nothing more of it
is kept), and the server is reported through `on_refused` so the connection can be
marked failed with that reason; the rest of the output is read and dropped until the
server is stopped, so a server blocked on a full pipe cannot hang the shutdown.

Spawning, the writer and the shutdown sequence are the SDK's own helpers, so the
process handling (its own process group, stdin closed first, then the kill) stays the
SDK's.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable
from typing import Any, TextIO

import anyio
import anyio.lowlevel
import anyio.to_thread
from mcp.client import stdio as sdk_stdio
from mcp.client.stdio import StdioServerParameters

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The largest message a server may send over stdio. The largest file a tool result may
carry to a model is 32 MiB, 43 MiB as base64 inside its JSON; a message larger than this
cannot be used, so it is refused while it is read instead of after."""
PARSE_OFF_LOOP_BYTES = 1024 * 1024
"""A message larger than this is parsed in a worker thread, off the app's event loop."""


def too_large_reason(limit: int) -> str:
    """What the person reads about a server that sent a message over `limit` bytes."""
    return (
        f"it sent a message larger than {limit // (1024 * 1024)} MiB, which Foldline "
        "refuses; the rest of its output was dropped"
    )


class LineGatherer:
    """Splits the server's output bytes into lines, keeping at most `limit` bytes of the
    line being read. Pure bookkeeping: no I/O, so it can be tested alone."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._pieces: list[bytes] = []
        self._size = 0
        self.over_limit = False
        """True once a line crossed the limit; nothing is gathered after that."""

    def feed(self, chunk: bytes) -> list[bytes]:
        """The complete lines `chunk` ends (without their newline); the rest is kept
        for the next chunk. Empty once the limit was crossed."""
        lines: list[bytes] = []
        start = 0
        while not self.over_limit:
            newline = chunk.find(b"\n", start)
            piece = chunk[start:] if newline < 0 else chunk[start:newline]
            if self._size + len(piece) > self.limit:
                self.over_limit = True
                self._pieces, self._size = [], 0
                break
            if newline < 0:
                if piece:
                    self._pieces.append(piece)
                    self._size += len(piece)
                break
            lines.append(b"".join([*self._pieces, piece]))
            self._pieces, self._size = [], 0
            start = newline + 1
        return lines


@contextlib.asynccontextmanager
async def bounded_stdio_client(
    server: StdioServerParameters,
    errlog: TextIO,
    on_refused: Callable[[str], None],
    *,
    max_message_bytes: int | None = None,
) -> AsyncGenerator[tuple[Any, Any], None]:
    """`mcp.client.stdio.stdio_client` with a bounded reader: yields the session's
    (read, write) streams; calls `on_refused(reason)` once if the server sends a
    message over `max_message_bytes`, then ends the read stream (a pending request
    learns that the connection closed). The limit defaults to `MAX_MESSAGE_BYTES`."""
    limit = MAX_MESSAGE_BYTES if max_message_bytes is None else max_message_bytes
    command = await sdk_stdio._get_executable_command(server.command)
    process = await sdk_stdio._create_platform_compatible_process(
        command=command,
        args=server.args,
        env=sdk_stdio.get_default_environment() | (server.env or {}),
        errlog=errlog,
        cwd=server.cwd,
    )
    # As in the SDK: no awaits between the spawn and the task group.
    read_stream_writer, read_stream = anyio.create_memory_object_stream[Any](0)
    write_stream, write_stream_reader = anyio.create_memory_object_stream[Any](0)
    writer_done = anyio.Event()

    def parse(line: bytes) -> Any:
        return sdk_stdio._parse_line(
            line.decode(server.encoding, errors=server.encoding_error_handler)
        )

    async def stdout_reader() -> None:
        assert process.stdout is not None
        gatherer = LineGatherer(limit)
        try:
            async with read_stream_writer:
                try:
                    async for chunk in process.stdout:
                        for line in gatherer.feed(chunk):
                            if len(line) > PARSE_OFF_LOOP_BYTES:
                                message = await anyio.to_thread.run_sync(parse, line)
                            else:
                                message = parse(line)
                            await read_stream_writer.send(message)
                        if gatherer.over_limit:
                            on_refused(too_large_reason(limit))
                            return  # the read stream closes; the drain drops the rest
                finally:
                    await sdk_stdio._drain_stdout(process)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
            pass  # the session or our own shutdown closed a stream under the read

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_stream_reader:
                async for session_message in write_stream_reader:
                    json = session_message.message.model_dump_json(
                        by_alias=True, exclude_unset=True
                    )
                    await process.stdin.send(
                        (json + "\n").encode(server.encoding, errors=server.encoding_error_handler)
                    )
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_stream_writer.aclose()
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(0.5):
            await writer_done.wait()
        await sdk_stdio._stop_server_process(process)
        await sdk_stdio._aclose_all(
            read_stream, write_stream, read_stream_writer, write_stream_reader
        )
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(stdout_reader)
        group.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            # Shielded and bounded, as in the SDK: a cancelled caller must not leak the
            # server process.
            with anyio.CancelScope(shield=True):
                await shutdown()
            group.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()
