// Server-sent events read from a fetch() response body.
//
// The browser's EventSource cannot send an Authorization header and cannot POST, so the
// turn and compact streams are read by hand: decode the body to text, split it into
// lines, and assemble events by the rules of the SSE format (event:/data: fields, a blank
// line ends an event, lines starting with ":" are comments such as the server's pings).

/** Assembles events from lines; the stream reading below only splits the text into lines. */
class EventParser {
  constructor() {
    this.eventName = "";
    /** @type {string[]} */
    this.dataLines = [];
  }

  /**
   * Feed one line (without its terminator); returns an event when the line ends one.
   * @param {string} line
   * @returns {SseEvent|null}
   */
  feedLine(line) {
    if (line === "") {
      return this.dispatch();
    }
    if (line.startsWith(":")) {
      return null;
    }
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) {
      value = value.slice(1);
    }
    if (field === "event") {
      this.eventName = value;
    } else if (field === "data") {
      this.dataLines.push(value);
    }
    return null;
  }

  /** @returns {SseEvent|null} */
  dispatch() {
    if (this.dataLines.length === 0 && this.eventName === "") {
      return null;
    }
    const name = this.eventName || "message";
    const raw = this.dataLines.join("\n");
    this.eventName = "";
    this.dataLines = [];
    /** @type {any} */
    let data = {};
    if (raw !== "") {
      try {
        data = JSON.parse(raw);
      } catch {
        data = { raw };
      }
    }
    return { name, data };
  }
}

/**
 * One server-sent event: its name ("message" when it has none) and its data parsed as
 * JSON (`{raw}` when it is not JSON, `{}` when there is none).
 * @typedef {{name: string, data: any}} SseEvent
 */

/**
 * Yield `{name, data}` events from a ReadableStream of bytes until it ends.
 * Handles \n, \r\n and \r line endings split anywhere across chunks.
 * @param {ReadableStream} body
 * @returns {AsyncGenerator<SseEvent>}
 */
export async function* readEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new EventParser();
  let buffer = "";
  let finished = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        finished = true;
        break;
      }
      buffer += value;
      let start = 0;
      for (let i = 0; i < buffer.length; i++) {
        const char = buffer[i];
        if (char !== "\n" && char !== "\r") {
          continue;
        }
        // A lone \r at the end of the buffer may be the first half of \r\n: wait.
        if (char === "\r" && i === buffer.length - 1) {
          break;
        }
        const line = buffer.slice(start, i);
        if (char === "\r" && buffer[i + 1] === "\n") {
          i++;
        }
        start = i + 1;
        const event = parser.feedLine(line);
        if (event) {
          yield event;
        }
      }
      buffer = buffer.slice(start);
    }
    if (buffer !== "") {
      const event = parser.feedLine(buffer);
      if (event) {
        yield event;
      }
    }
    const last = parser.dispatch();
    if (last) {
      yield last;
    }
  } finally {
    // A consumer that stops early (Stop, a closed view) must close the connection too,
    // so the server sees the disconnect and keeps the partial answer.
    if (!finished) {
      await reader.cancel().catch(() => {});
    }
    reader.releaseLock();
  }
}
