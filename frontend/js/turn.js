// Running a turn (send, retry, edit, regenerate) and a manual fold: starting its stream,
// reading it (its events are applied to the views by `turn-events.js`) and settling the
// screen when it ends.
//
// The server persists everything it streams, so the events only make the screen live;
// when a stream ends the newest messages, the folds and the meter are re-read from the
// server, which makes what is on screen exactly what is stored. Stop calls the cancel
// route and keeps reading: the stream then ends with the interrupted message and `done`.

import { api } from "./api.js";
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
import { currentFold, emit, setBusy, state } from "./state.js";
import { nameIfNew, watchForMadeTitle } from "./titles.js";
import {
  announceError,
  applyEvent,
  cancelDraws,
  hideProgress,
  newLiveState,
  showProgress,
} from "./turn-events.js";

/** The stream being read, so Stop and Esc can reach it. */
let running = null;

/** Hooks into the app (set by main.js) for things outside the chat view. */
const app = {
  refreshConversation: async () => {},
  refreshFolds: async () => {},
  refreshContext: async () => {},
  refreshList: async () => {},
  reopen: async () => {},
};

export function initTurns(hooks) {
  Object.assign(app, hooks);
}

export function isRunning() {
  return running !== null;
}

// ---- streams -----------------------------------------------------------------------

/** Events that show the model (or a fold) has started: the waiting line goes. */
const STARTED = new Set(["assistant.delta", "tool.call", "compaction.started", "error", "done"]);

/**
 * Until the model's first words arrive, say what the turn waits for (on a cold start the
 * provider's client is still being loaded), rather than showing only Stop.
 */
function waitingLine(kind) {
  if (kind !== "turn") {
    return () => {};
  }
  const model = state.conversation?.model || state.settings?.defaults?.model || "the model";
  const timer = setTimeout(() => {
    showProgress(`Waiting for ${model} to start answering…`);
    byId("composer-status").querySelector(".progress-banner").dataset.waiting = "true";
  }, 600);
  return () => {
    clearTimeout(timer);
    const banner = byId("composer-status").querySelector(".progress-banner");
    if (banner?.dataset.waiting) {
      hideProgress();
    }
  };
}

async function consume(kind, events, live) {
  const controller = running.controller;
  let stopWaiting = waitingLine(kind);
  try {
    for await (const { name, data } of events) {
      if (STARTED.has(name)) {
        stopWaiting();
        stopWaiting = () => {};
      }
      applyEvent(live, name, data, app);
      if (name === "done") {
        break;
      }
    }
  } catch (error) {
    if (error.name !== "AbortError" || !controller.signal.aborted) {
      notifyError(kind === "compact" ? "The fold failed" : "The answer stopped", error);
    }
  } finally {
    stopWaiting();
  }
}

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
    await Promise.all([app.reopen(), app.refreshList()]);
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
 * Send `content` and its `files` (a tray's `attachments()` and `parts()`) to the open
 * conversation and stream the turn.
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
  putMessage({
    index: pendingIndex,
    id: "",
    role: "user",
    parts: [...(content ? [{ kind: "text", text: content }] : []), ...files.parts],
    status: "complete",
    pending: true,
  });
  running = { kind: "turn", controller: new AbortController(), conversationId: id };
  setBusy("turn");
  let events;
  try {
    events = await api.sendMessage(id, content, running.controller.signal, files.attachments);
  } catch (error) {
    dropLocalMessage(pendingIndex);
    running = null;
    setBusy(null);
    notifyError("The message was not sent", error);
    return false;
  }
  const firstTitle = nameIfNew(id, content || files.parts.map((part) => part.name).join(", "));
  await consume("turn", events, live);
  await finish(live);
  if (firstTitle) {
    watchForMadeTitle(id, firstTitle, app.refreshList);
  }
  return true;
}

/**
 * Follow a turn or fold that is already running in the open conversation (started
 * before a reload, or in another window): the server replays what it emitted so far,
 * then streams the rest, so the answer is drawn as it grows, with Stop, to the end.
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
  const first = await iterator.next().catch(() => ({ done: true }));
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
  running = { kind: "turn", controller: new AbortController(), conversationId: id };
  setBusy("turn");
  let events;
  try {
    events = await api.retry(id, running.controller.signal);
  } catch (error) {
    running = null;
    setBusy(null);
    notifyError("Could not retry", error);
    // A refusal may mean the view is stale (the answer was completed elsewhere).
    await reconcileTail(live.firstIndex);
    return false;
  }
  await consume("turn", events, live);
  await finish(live);
  return true;
}

/**
 * Edit the person's message: the new text is stored as a new version of it (its sibling)
 * and answered. On screen the history from that message on is replaced by the new
 * branch; the old one stays stored, a switch away.
 * @param {MessageOut} message
 */
export function editMessage(message, content, files = { attachments: [], keep: [], parts: [] }) {
  const send = (id, signal) =>
    api.editMessage(id, message.id, content, signal, files.attachments, files.keep);
  return runBranch(message, send, {
    pending: {
      role: "user",
      parts: [...(content ? [{ kind: "text", text: content }] : []), ...files.parts],
    },
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
  running = { kind: "turn", controller: new AbortController(), conversationId: id };
  setBusy("turn");
  let events;
  try {
    events = await start(id, running.controller.signal);
  } catch (error) {
    running = null;
    setBusy(null);
    notifyError(failure, error);
    return false;
  }
  // The folds whose last message is cut off no longer apply to the new branch; the
  // server's copy replaces this guess when the turn ends.
  const kept = foldKeptAt(state.compactions, currentFold(), message.index);
  if (state.conversation) {
    state.conversation = { ...state.conversation, compaction: kept };
  }
  if (state.context) {
    state.context = { ...state.context, compaction: kept };
  }
  cutHistory(message.index);
  const live = newLiveState();
  if (pending) {
    putMessage({ index: message.index, id: "", status: "complete", pending: true, ...pending });
  }
  await consume("turn", events, live);
  await finish(live);
  if (!document.activeElement || document.activeElement === document.body) {
    const again = document.querySelector(
      `.chat-inner .message[data-index="${message.index}"] .${control}`,
    );
    (again ?? byId("composer-input")).focus();
  }
  return true;
}

/**
 * Fold now with optional instructions; `onEvent` sees every event (the dialog's progress).
 * `keepRecentTokens` keeps more than the last exchange verbatim.
 */
export async function compactNow(instructions, { onEvent, keepRecentTokens } = {}) {
  const id = state.currentId;
  if (!id || running) {
    return null;
  }
  const live = newLiveState();
  running = { kind: "compact", controller: new AbortController(), conversationId: id };
  setBusy("compact");
  showProgress("Summarizing…");
  let outcome = { completed: null, failed: null, error: null };
  try {
    const events = await api.compact(
      id,
      instructions,
      running.controller.signal,
      keepRecentTokens,
    );
    for await (const { name, data } of events) {
      onEvent?.(name, data);
      if (name === "compaction.completed") {
        outcome.completed = data;
      } else if (name === "compaction.failed") {
        outcome.failed = data;
      } else if (name === "error") {
        outcome.error = data;
      }
      applyEvent(live, name, data, app);
      if (name === "done") {
        break;
      }
    }
  } catch (error) {
    outcome = { ...outcome, error };
    if (error.name !== "AbortError") {
      notifyError("The fold failed", error);
    }
  }
  await finish(live);
  emit("compactions", state.compactions);
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
