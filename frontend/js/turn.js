// Running a turn (send, retry, edit, regenerate) and a manual fold: starting its stream,
// reading it (its events are applied to the views by `turn-events.js`) and settling the
// screen when it ends.
//
// The server persists everything it streams, so the events only make the screen live;
// when a stream ends the newest messages, the folds and the meter are re-read from the
// server, which makes what is on screen exactly what is stored. Stop calls the cancel
// route and keeps reading: the stream then ends with the interrupted message and `done`.

import { api } from "./api.js";
import { app } from "./app.js";
import {
  cutHistory,
  dropLocalMessage,
  jumpToLatest,
  messageAt,
  putMessage,
  reconcileTail,
  renderFolds,
  totalMessages,
} from "./chat.js";
import { byId } from "./dom.js";
import { foldKeptAt } from "./fold.js";
import { clearApprovals } from "./mcp.js";
import { clearQuestions } from "./mcp-questions.js";
import { notifyError } from "./notices.js";
import { currentFold, setBusy, state, update } from "./state.js";
import { nameIfNew, watchForMadeTitle } from "./titles.js";
import {
  announceError,
  applyEvent,
  cancelDraws,
  hideProgress,
  newLiveState,
  showProgress,
} from "./turn-events.js";

/**
 * The stream being read, so Stop and Esc can reach it: a turn or a fold, of which
 * conversation, and whether this page only follows it (another page or a reload started it).
 * @typedef {Object} RunningStream
 * @property {"turn"|"compact"} kind
 * @property {AbortController} controller
 * @property {string} conversationId
 * @property {boolean} [followed]
 */

/** @type {RunningStream|null} */
let running = null;

export function isRunning() {
  return running !== null;
}

// ---- streams -----------------------------------------------------------------------

/** Events that show the model (or a fold) has started: the waiting line goes. */
const STARTED = new Set(["assistant.delta", "tool.call", "compaction.started", "error", "done"]);

/**
 * Until the model's first words arrive, say what the turn waits for (on a cold start the
 * provider's client is still being loaded), rather than showing only Stop.
 * @param {"turn"|"compact"} kind
 */
function waitingLine(kind) {
  if (kind !== "turn") {
    return () => {};
  }
  const model = state.conversation?.model || state.settings?.defaults?.model || "the model";
  const timer = setTimeout(() => {
    showProgress(`Waiting for ${model} to start answering…`);
    /** @type {HTMLElement} */ (
      byId("composer-status").querySelector(".progress-banner")
    ).dataset.waiting = "true";
  }, 600);
  return () => {
    clearTimeout(timer);
    const banner = /** @type {HTMLElement|null} */ (
      byId("composer-status").querySelector(".progress-banner")
    );
    if (banner?.dataset.waiting) {
      hideProgress();
    }
  };
}

/**
 * Read a stream's events to its end (`done`), applying each to the views; `onEvent` sees
 * each one first. Returns what broke the stream off, or null.
 * @param {"turn"|"compact"} kind
 * @param {AsyncIterable<StreamEvent>} events
 * @param {import("./turn-events.js").LiveStream} live
 * @param {(event: StreamEvent) => void} [onEvent]
 * @returns {Promise<Error|null>}
 */
async function consume(kind, events, live, onEvent) {
  const controller = running.controller;
  let stopWaiting = waitingLine(kind);
  try {
    for await (const event of events) {
      if (STARTED.has(event.name)) {
        stopWaiting();
        stopWaiting = () => {};
      }
      onEvent?.(event);
      applyEvent(live, event);
      if (event.name === "done") {
        break;
      }
    }
    return null;
  } catch (error) {
    if (error.name !== "AbortError" || !controller.signal.aborted) {
      notifyError(kind === "compact" ? "The fold failed" : "The answer stopped", error);
    }
    return error;
  } finally {
    stopWaiting();
  }
}

/** @param {import("./turn-events.js").LiveStream} live */
async function finish(live) {
  cancelDraws();
  hideProgress();
  clearApprovals();
  clearQuestions();
  running = null;
  setBusy(null);
  if (state.currentId !== live.conversationId) {
    announceError(live.error);
    await app.refreshList();
    return;
  }
  if (live.stale) {
    await Promise.all([app.reread(), app.refreshList()]);
    announceError(live.error);
    return;
  }
  await Promise.all([
    reconcileTail(live.firstIndex),
    app.refreshFolds(),
    app.refreshContext(),
    app.refreshList(),
  ]);
  renderFolds();
  // A failed answer on screen explains itself (with Retry); a toast would repeat it.
  if (messageAt(totalMessages() - 1)?.status !== "error") {
    announceError(live.error);
  }
}

/**
 * How a stream this page starts goes (see `runStream`).
 * @typedef {Object} StreamStart
 * @property {"turn"|"compact"} kind
 * @property {string} conversationId
 * @property {(signal: AbortSignal) => Promise<AsyncIterable<StreamEvent>>} start Asks the
 *   server; throws when it refuses.
 * @property {string} failure What a refusal is announced as.
 * @property {import("./turn-events.js").LiveStream} [live] The stream's live state, when
 *   made before the server was asked (else made once it accepted).
 * @property {() => import("./turn-events.js").LiveStream|void} [accepted] What the screen
 *   does once the server accepted; it may return the live state, made after the screen
 *   changed.
 * @property {() => void|Promise<void>} [refused] What the screen undoes after a refusal.
 * @property {(event: StreamEvent) => void} [onEvent] Sees every event first.
 */

/**
 * Run a stream this page starts: claim the page for it (busy, Stop), ask the server, then
 * read what it streams to the end and settle the screen from the store. A refusal (409
 * while another turn runs, a message the server refuses) comes before any event: the page
 * is released, the refusal announced, and the answer is `{started: false}`.
 * @param {StreamStart} stream
 * @returns {Promise<{started: boolean, error?: Error|null}>}
 */
async function runStream(stream) {
  const { kind, conversationId, accepted, refused, onEvent } = stream;
  running = { kind, controller: new AbortController(), conversationId };
  setBusy(kind);
  let events;
  try {
    events = await stream.start(running.controller.signal);
  } catch (error) {
    running = null;
    setBusy(null);
    notifyError(stream.failure, error);
    await refused?.();
    return { started: false, error };
  }
  const live = accepted?.() || stream.live || newLiveState();
  const error = await consume(kind, events, live, onEvent);
  await finish(live);
  return { started: true, error };
}

/**
 * The files of a person's message: as the API takes the new ones, and as parts to show.
 * @typedef {{attachments: AttachmentIn[], parts: AttachmentPartOut[]}} OutgoingFiles
 */

/**
 * The person's message as shown at once, until the server's copy replaces it: what they
 * wrote, without the fields only the server fills.
 * @param {number} index
 * @param {string} content
 * @param {AttachmentPartOut[]} files
 * @returns {import("./chat.js").ShownMessage}
 */
function pendingMessage(index, content, files) {
  /** @type {PartOut[]} */
  const parts = content ? [{ kind: "text", text: content }, ...files] : [...files];
  return /** @type {import("./chat.js").ShownMessage} */ ({
    index,
    id: "",
    role: "user",
    parts,
    status: "complete",
    pending: true,
  });
}

/**
 * Send `content` and its `files` (a tray's `attachments()` and `parts()`) to the open
 * conversation and stream the turn.
 * @param {string} content
 * @param {OutgoingFiles} [files]
 */
export async function sendMessage(content, files = { attachments: [], parts: [] }) {
  const id = state.currentId;
  if (!id || running) {
    return false;
  }
  await jumpToLatest();
  const live = newLiveState();
  // Show the person's message at once; the server's copy replaces it when it arrives.
  const pendingIndex = totalMessages();
  putMessage(pendingMessage(pendingIndex, content, files.parts));
  let firstTitle = null;
  const { started } = await runStream({
    kind: "turn",
    conversationId: id,
    live,
    start: (signal) => api.sendMessage(id, content, signal, files.attachments),
    failure: "The message was not sent",
    refused: () => dropLocalMessage(pendingIndex),
    accepted: () => {
      firstTitle = nameIfNew(id, content || files.parts.map((part) => part.name).join(", "));
    },
  });
  if (firstTitle) {
    watchForMadeTitle(id, firstTitle, app.refreshList);
  }
  return started;
}

/**
 * Follow a turn or fold that is already running in the open conversation (started
 * before a reload, or in another window): the server replays what it emitted so far,
 * then streams the rest, so the answer is drawn as it grows, with Stop, to the end.
 * @param {string} id
 */
export async function followRunning(id) {
  if (!id || running) {
    return false;
  }
  const controller = new AbortController();
  let events;
  try {
    events = await api.events(id, controller.signal);
  } catch (error) {
    notifyError("Could not follow the running answer", error);
    return false;
  }
  const iterator = events[Symbol.asyncIterator]();
  /** @type {IteratorResult<StreamEvent>} */
  const first = await iterator.next().catch(() => ({ done: true, value: undefined }));
  // An empty stream: nothing runs. Another send may have started meanwhile, too.
  if (first.done || running || state.currentId !== id) {
    controller.abort();
    return false;
  }
  const live = newLiveState();
  running = { kind: "turn", controller, conversationId: id, followed: true };
  setBusy("turn");
  async function* rest() {
    yield first.value;
    for (;;) {
      const next = await iterator.next();
      if (next.done) {
        return;
      }
      yield next.value;
    }
  }
  await consume("turn", rest(), live);
  await finish(live);
  return true;
}

/** Stop following a turn this page did not start (the person opened another conversation). */
export function stopFollowing() {
  if (running?.followed) {
    running.controller.abort();
  }
}

/**
 * Retry after an error: the server runs the model again on the history as it is
 * (POST /retry), so the question is not sent, stored or shown a second time. The failed
 * answer stays in the history above the new one.
 */
export async function retryLast() {
  const id = state.currentId;
  if (!id || running) {
    return false;
  }
  await jumpToLatest();
  const live = newLiveState();
  const { started } = await runStream({
    kind: "turn",
    conversationId: id,
    live,
    start: (signal) => api.retry(id, signal),
    failure: "Could not retry",
    // A refusal may mean the view is stale (the answer was completed elsewhere).
    refused: () => reconcileTail(live.firstIndex),
  });
  return started;
}

/**
 * Edit the person's message: the new text is stored as a new version of it (its sibling)
 * and answered. On screen the history from that message on is replaced by the new
 * branch; the old one stays stored, a switch away.
 * @param {MessageOut} message
 * @param {string} content
 * @param {OutgoingFiles & {keep: string[]}} [files] `keep`: the sha256s of the old
 *   version's files that stay
 */
export function editMessage(message, content, files = { attachments: [], keep: [], parts: [] }) {
  /** @param {string} id @param {AbortSignal} signal */
  const send = (id, signal) =>
    api.editMessage(id, message.id, content, signal, files.attachments, files.keep);
  return runBranch(message, send, {
    pending: { content, files: files.parts },
    failure: "The edited message was not sent",
  });
}

/**
 * A new answer in place of `message` (its sibling); the old answer stays a switch away.
 * @param {MessageOut} message
 */
export function regenerate(message) {
  return runBranch(message, (id, signal) => api.regenerate(id, message.id, signal), {
    failure: "Could not regenerate the answer",
  });
}

/**
 * Start a turn that branches at `message` and stream it. The screen is cut at the
 * message only once the server accepted, so a refusal (409 while another turn runs)
 * leaves the history as it was.
 * @param {MessageOut} message
 * @param {(id: string, signal: AbortSignal) => Promise<AsyncIterable<StreamEvent>>} start
 * @param {{pending?: {content: string, files: AttachmentPartOut[]}|null, failure: string}} options
 *   `pending`: the person's new version, shown until the server's copy arrives
 */
async function runBranch(message, start, { pending = null, failure }) {
  const id = state.currentId;
  if (!id || running) {
    return false;
  }
  // The button that started it is redrawn with the new version: keyboard focus goes to
  // its counterpart there afterwards, not to the page.
  const control = document.activeElement?.classList?.contains("regenerate-button")
    ? "regenerate-button"
    : "edit-button";
  const { started } = await runStream({
    kind: "turn",
    conversationId: id,
    start: (signal) => start(id, signal),
    failure,
    accepted: () => {
      // The folds whose last message is cut off no longer apply to the new branch; the
      // server's copy replaces this guess when the turn ends.
      const kept = foldKeptAt(state.compactions, currentFold(), message.index);
      update({
        compaction: kept,
        ...(state.context ? { context: { ...state.context, compaction: kept } } : {}),
      });
      cutHistory(message.index);
      const live = newLiveState();
      if (pending) {
        putMessage(pendingMessage(message.index, pending.content, pending.files));
      }
      return live;
    },
  });
  if (!started) {
    return false;
  }
  if (!document.activeElement || document.activeElement === document.body) {
    const again = /** @type {HTMLElement|null} */ (
      document.querySelector(`.chat-inner .message[data-index="${message.index}"] .${control}`)
    );
    (again ?? byId("composer-input")).focus();
  }
  return true;
}

/**
 * What a fold run from the Compact dialog came to: the fold, the reason it did not
 * happen, or what broke it off (an `error` event's body or the failure itself).
 * @typedef {Object} FoldOutcome
 * @property {CompactionCompleted|null} completed
 * @property {CompactionFailed|null} failed
 * @property {ErrorEventBody|Error|null} error
 */

/**
 * Fold now with optional instructions; `onEvent` sees every event (the dialog's progress).
 * `keepRecentTokens` keeps more than the last exchange verbatim.
 * @param {string|undefined} instructions
 * @param {{onEvent?: (name: string, data: object) => void, keepRecentTokens?: number}} [options]
 * @returns {Promise<FoldOutcome|null>}
 */
export async function compactNow(instructions, { onEvent, keepRecentTokens } = {}) {
  const id = state.currentId;
  if (!id || running) {
    return null;
  }
  /** @type {FoldOutcome} */
  const outcome = { completed: null, failed: null, error: null };
  const { started, error } = await runStream({
    kind: "compact",
    conversationId: id,
    live: newLiveState(),
    start: (signal) => {
      showProgress("Summarizing…");
      return api.compact(id, instructions, signal, keepRecentTokens);
    },
    failure: "The fold failed",
    refused: hideProgress,
    onEvent: (event) => {
      onEvent?.(event.name, event.data);
      if (event.name === "compaction.completed") {
        outcome.completed = event.data;
      } else if (event.name === "compaction.failed") {
        outcome.failed = event.data;
      } else if (event.name === "error") {
        outcome.error = event.data;
      }
    },
  });
  if (!started || error) {
    outcome.error = error;
  }
  return outcome;
}

/** Stop the running turn or fold; the partial answer is kept, marked interrupted. */
export async function stop() {
  if (!running) {
    return;
  }
  const current = running;
  try {
    await api.cancel(current.conversationId);
  } catch (error) {
    notifyError("Could not stop", error);
  }
  // The stream normally ends by itself with `done`; if it does not, close it.
  setTimeout(() => {
    if (running === current) {
      current.controller.abort();
    }
  }, 4000);
}
