// The chat view: messages drawn in the loaded window of the history (chat-window.js,
// paged by chat-paging.js), the fold lines between them, and the live end where a
// running turn writes.
//
// Fold lines are drawn between messages at the `apiStartIndex` of each visible fold, and
// every message before the current one is dimmed as display-only.

import { app } from "./app.js";
import { closeWindow, fetchPage, initWindow, PAGE_SIZE } from "./chat-paging.js";
import {
  callOwner,
  cutAt,
  dropLast,
  elementAt,
  endMarker,
  isOpen,
  isStreaming,
  listElement,
  loadedElements,
  messageAt,
  placeMessage,
  recordResult,
  resultFor,
  settleTotal,
  totalMessages,
  updateEdges,
  windowBounds,
} from "./chat-window.js";
import { renderFoldLine, visibleFolds } from "./fold.js";
import { fillMessage, renderMessage } from "./messages.js";
import { notifyError } from "./notices.js";
import { followsEnd, scrollToBottom } from "./reader-place.js";
import { apiStartIndex, currentFold, state } from "./state.js";

export { fetchNewest, jumpToLatest, openWindow as openConversation } from "./chat-paging.js";
export { messageAt, totalMessages } from "./chat-window.js";

/**
 * A message as the chat draws it: one the server sent, or the person's own shown before
 * the server's copy arrives (`pending`).
 * @typedef {MessageOut & {pending?: boolean}} ShownMessage
 */

const tools = {
  /** @param {string} callId */
  resultFor: (callId) => resultFor(callId),
  /** @param {string} callId */
  hasCall: (callId) => callOwner(callId) !== undefined,
};

export function initChat() {
  initWindow({ build, afterPage: renderFolds });
}

/** @param {MessageOut} message */
function isLastMessage(message) {
  return message.index === totalMessages() - 1;
}

/** What a message's buttons do, and how it is drawn. @param {MessageOut} message */
function options(message, streaming = false) {
  return {
    tools,
    onRetry: () => app.retry(),
    onEdit: app.edit,
    onRegenerate: app.regenerate,
    onSwitch: app.switchVersion,
    canRetry: isLastMessage(message) && !state.busy,
    streaming,
  };
}

/** @param {MessageOut} message */
function build(message) {
  const element = renderMessage(message, options(message, isStreaming(message.index)));
  element.classList.toggle("folded", message.index < apiStartIndex());
  return element;
}

/** The start screen: no conversation's messages. */
export function clearChat() {
  closeWindow();
}

/** Redraw every fold line and the dimming of the messages above the current one. */
export function renderFolds() {
  for (const line of listElement().querySelectorAll(".fold-line")) {
    line.remove();
  }
  const current = currentFold();
  const start = apiStartIndex();
  for (const [i, element] of loadedElements()) {
    element.classList.toggle("folded", i < start);
  }
  const { lo, hi, total } = windowBounds();
  for (const [position, fold] of visibleFolds(state.compactions, current).entries()) {
    const at = fold.apiStartIndex;
    let anchor = null;
    if (at >= lo && at < hi) {
      anchor = elementAt(at);
    } else if (at === hi && hi === total) {
      anchor = endMarker();
    }
    if (!anchor) {
      continue;
    }
    const isCurrent = fold.version === current.version;
    anchor.before(
      renderFoldLine(fold, {
        current: isCurrent,
        onUndo: (undone) => app.undoFold(undone),
        position: position + 1,
      }),
    );
  }
}

// ---- Live updates from a running turn ------------------------------------------------

function afterLiveChange() {
  if (followsEnd()) {
    scrollToBottom();
  }
  updateEdges();
}

/**
 * Add or replace a message at the live end of the history.
 * @param {ShownMessage} message
 * @param {{streaming?: boolean}} [drawing]
 */
export function putMessage(message, { streaming = false } = {}) {
  const { placed, element } = placeMessage(message, streaming);
  if (placed === "closed" || placed === "counted") {
    return;
  }
  if (element) {
    fillMessage(element, message, options(message, streaming));
  }
  if (message.role === "tool") {
    refreshCardsFor(message);
  }
  // The previous last message may have offered "Retry" or "Continue"; only the last may.
  const previous = messageAt(message.index - 1);
  if (previous?.status === "error" || previous?.status === "interrupted") {
    fillMessage(elementAt(previous.index), previous, options(previous));
  }
  afterLiveChange();
}

/**
 * Redraw the assistant messages whose call cards show results from this tool message.
 * @param {MessageOut} toolMessage
 */
function refreshCardsFor(toolMessage) {
  const owners = new Set();
  for (const part of toolMessage.parts ?? []) {
    if (part.kind === "tool-result" && callOwner(part.callId) !== undefined) {
      owners.add(callOwner(part.callId));
    }
  }
  for (const owner of owners) {
    redrawMessage(owner);
  }
}

/**
 * Record a result that arrived before its tool message, and redraw its card.
 * @param {ToolResultEventOut} result
 */
export function putToolResult(result) {
  const owner = recordResult(result);
  if (redrawMessage(owner)) {
    afterLiveChange();
  }
}

/** The element of message `i` when it is loaded. */
export function messageElement(i) {
  return elementAt(i);
}

/**
 * Draw message `i` again from its data (e.g. when its inline editor is cancelled); false
 * when it is not loaded.
 */
export function redrawMessage(i) {
  const message = messageAt(i);
  const element = elementAt(i);
  if (message && element) {
    fillMessage(element, message, options(message, isStreaming(i)));
    return true;
  }
  return false;
}

/**
 * Drop message `i` and everything after it from the screen: an edit or a regeneration
 * replaces them by a new branch (they stay stored, and the switcher leads back to them).
 */
export function cutHistory(i) {
  if (!cutAt(i)) {
    return;
  }
  renderFolds();
  // The new branch grows from here: follow it as a sent message is followed.
  scrollToBottom();
  updateEdges();
}

/** Remove a message that only existed on this page (an optimistic one the server refused). */
export function dropLocalMessage(i) {
  dropLast(i);
}

/**
 * Replace the newest messages by the server's copy after a turn, so what is on screen is
 * exactly what is stored (statuses, ids, pruned outputs, the final text).
 * @param {number} fromIndex
 */
export async function reconcileTail(fromIndex) {
  if (!isOpen()) {
    return;
  }
  const total = totalMessages();
  const start = Math.max(0, Math.min(fromIndex, total - 1));
  try {
    const page = await fetchPage(start, Math.max(PAGE_SIZE, total - start + 8));
    if (!page) {
      return;
    }
    settleTotal(page.total);
    for (const message of page.messages) {
      if (message.index < windowBounds().lo) {
        continue;
      }
      const old = messageAt(message.index);
      const unchanged =
        old && elementAt(message.index) && JSON.stringify(old) === JSON.stringify(message);
      if (!unchanged) {
        putMessage(message);
      }
    }
    // The last message may have changed (a new error, a finished turn): only it offers Retry.
    const last = messageAt(totalMessages() - 1);
    if (last && elementAt(last.index)) {
      fillMessage(elementAt(last.index), last, options(last));
    }
    renderFolds();
  } catch (error) {
    notifyError("Could not refresh the conversation", error);
  }
}
