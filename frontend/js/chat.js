// The chat view: messages drawn in the loaded window of the history (chat-window.js),
// the fold lines between them, and the live end where a running turn writes.
//
// Fold lines are drawn between messages at the `apiStartIndex` of each visible fold, and
// every message before the current one is dimmed as display-only.

import {
  endMarker,
  fetchPage,
  forget,
  index,
  initWindow,
  listElement,
  PAGE_SIZE,
  removeIndex,
  scrollToBottom,
  showEmpty,
  updateEdges,
  view,
} from "./chat-window.js";
import { renderFoldLine, visibleFolds } from "./fold.js";
import { fillMessage, renderMessage } from "./messages.js";
import { notifyError } from "./notices.js";
import { apiStartIndex, currentFold, state } from "./state.js";

export { fetchNewest, jumpToLatest, openWindow as openConversation } from "./chat-window.js";

/** What a message's buttons and the fold lines call (set by main.js). */
const hooks = { onRetry: null, onUndo: null, onEdit: null, onRegenerate: null, onSwitch: null };

const tools = {
  resultFor: (callId) => view.results.get(callId) ?? null,
  hasCall: (callId) => view.calls.has(callId),
};

export function initChat(actions) {
  Object.assign(hooks, actions);
  initWindow({ build, afterPage: renderFolds });
}

function isLastMessage(message) {
  return message.index === view.total - 1;
}

function options(message, streaming = false) {
  return {
    tools,
    onRetry: hooks.onRetry,
    onEdit: hooks.onEdit,
    onRegenerate: hooks.onRegenerate,
    onSwitch: hooks.onSwitch,
    canRetry: isLastMessage(message) && !state.busy,
    streaming,
  };
}

function build(message) {
  const element = renderMessage(message, options(message, view.streamingIndex === message.index));
  element.classList.toggle("folded", message.index < apiStartIndex());
  view.elements.set(message.index, element);
  return element;
}

export function clearChat() {
  view.generation++;
  showEmpty();
}

/** Redraw every fold line and the dimming of the messages above the current one. */
export function renderFolds() {
  for (const line of listElement().querySelectorAll(".fold-line")) {
    line.remove();
  }
  const current = currentFold();
  const start = apiStartIndex();
  for (const [i, element] of view.elements) {
    element.classList.toggle("folded", i < start);
  }
  for (const [position, fold] of visibleFolds(state.compactions, current).entries()) {
    const at = fold.apiStartIndex;
    let anchor = null;
    if (at >= view.lo && at < view.hi) {
      anchor = view.elements.get(at);
    } else if (at === view.hi && view.hi === view.total) {
      anchor = endMarker();
    }
    if (!anchor) {
      continue;
    }
    const isCurrent = fold.version === current.version;
    anchor.before(
      renderFoldLine(fold, { current: isCurrent, onUndo: hooks.onUndo, position: position + 1 }),
    );
  }
}

// ---- Live updates from a running turn ------------------------------------------------

function afterLiveChange() {
  if (view.stickToBottom) {
    scrollToBottom();
  }
  updateEdges();
}

/**
 * Add or replace a message at the live end of the history.
 * @param {MessageOut} message
 */
export function putMessage(message, { streaming = false } = {}) {
  if (!view.conversationId) {
    return;
  }
  if (streaming) {
    view.streamingIndex = message.index;
  } else if (view.streamingIndex === message.index) {
    view.streamingIndex = null;
  }
  const existing = view.elements.get(message.index);
  const old = view.messages.get(message.index);
  if (old) {
    forget(old);
  }
  view.messages.set(message.index, message);
  index(message);
  if (existing) {
    fillMessage(existing, message, options(message, streaming));
  } else if (message.index >= view.hi) {
    if (view.hi !== view.total) {
      // The person is reading far up; the message is counted and shown on return.
      view.total = Math.max(view.total, message.index + 1);
      updateEdges();
      return;
    }
    const element = build(message);
    endMarker().before(element);
    view.hi = message.index + 1;
    view.total = Math.max(view.total, view.hi);
  }
  if (message.role === "tool") {
    refreshCardsFor(message);
  }
  // The previous last message may have offered "Retry" or "Continue"; only the last may.
  const previous = view.messages.get(message.index - 1);
  if (previous?.status === "error" || previous?.status === "interrupted") {
    fillMessage(view.elements.get(previous.index), previous, options(previous));
  }
  afterLiveChange();
}

/** Redraw the assistant messages whose call cards show results from this tool message. */
function refreshCardsFor(toolMessage) {
  const owners = new Set();
  for (const part of toolMessage.parts ?? []) {
    if (part.kind === "tool-result" && view.calls.has(part.callId)) {
      owners.add(view.calls.get(part.callId));
    }
  }
  for (const owner of owners) {
    const message = view.messages.get(owner);
    const element = view.elements.get(owner);
    if (message && element) {
      fillMessage(element, message, options(message, view.streamingIndex === owner));
    }
  }
}

/**
 * Record a result that arrived before its tool message, and redraw its card.
 * @param {ToolResultEventOut} result
 */
export function putToolResult(result) {
  view.results.set(result.callId, result);
  const owner = view.calls.get(result.callId);
  const message = view.messages.get(owner);
  const element = view.elements.get(owner);
  if (message && element) {
    fillMessage(element, message, options(message, view.streamingIndex === owner));
    afterLiveChange();
  }
}

export function messageAt(i) {
  return view.messages.get(i) ?? null;
}

/** The element of message `i` when it is loaded. */
export function messageElement(i) {
  return view.elements.get(i) ?? null;
}

/** Draw message `i` again from its data (e.g. when its inline editor is cancelled). */
export function redrawMessage(i) {
  const message = view.messages.get(i);
  const element = view.elements.get(i);
  if (message && element) {
    fillMessage(element, message, options(message, view.streamingIndex === i));
  }
}

/**
 * Drop message `i` and everything after it from the screen: an edit or a regeneration
 * replaces them by a new branch (they stay stored, and the switcher leads back to them).
 */
export function cutHistory(i) {
  if (!view.conversationId || i < view.lo || i > view.hi) {
    return;
  }
  for (let at = view.hi - 1; at >= i; at--) {
    removeIndex(at);
  }
  view.hi = i;
  view.total = i;
  view.streamingIndex = null;
  renderFolds();
  // The new branch grows from here: follow it as a sent message is followed.
  scrollToBottom();
  updateEdges();
}

export function totalMessages() {
  return view.total;
}

/** Remove a message that only existed on this page (an optimistic one the server refused). */
export function dropLocalMessage(i) {
  if (i === view.hi - 1 && i === view.total - 1) {
    removeIndex(i);
    view.hi--;
    view.total--;
    updateEdges();
  }
}

/**
 * Replace the newest messages by the server's copy after a turn, so what is on screen is
 * exactly what is stored (statuses, ids, pruned outputs, the final text).
 */
export async function reconcileTail(fromIndex) {
  if (!view.conversationId) {
    return;
  }
  const start = Math.max(0, Math.min(fromIndex, view.total - 1));
  try {
    const page = await fetchPage(start, Math.max(PAGE_SIZE, view.total - start + 8));
    if (!page) {
      return;
    }
    view.streamingIndex = null;
    // Messages the server no longer has (an optimistic one it refused) go away.
    for (let i = page.total; i < view.hi; i++) {
      removeIndex(i);
    }
    view.hi = Math.min(view.hi, page.total);
    view.total = page.total;
    for (const message of page.messages) {
      if (message.index < view.lo) {
        continue;
      }
      const old = view.messages.get(message.index);
      const unchanged =
        old && view.elements.has(message.index) && JSON.stringify(old) === JSON.stringify(message);
      if (!unchanged) {
        putMessage(message);
      }
    }
    // The last message may have changed (a new error, a finished turn): only it offers Retry.
    const last = view.messages.get(view.total - 1);
    if (last && view.elements.has(last.index)) {
      fillMessage(view.elements.get(last.index), last, options(last));
    }
    renderFolds();
  } catch (error) {
    notifyError("Could not refresh the conversation", error);
  }
}
