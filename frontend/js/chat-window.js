// The loaded window of the display history: which messages are loaded, their elements,
// and the live end where a running turn writes.
//
// A conversation may hold tens of thousands of messages, so the view never loads or
// draws them all: it holds a window [lo, hi) of them (`view`). The pages that move that
// window are chat-paging.js's, and keeping the text under the reader still while they
// come and go is reader-place.js's. Both import this module and it imports neither, so
// the three have no import cycle.
//
// `view` is changed only here and by chat-paging.js (which moves its bounds as pages come
// and go); reader-place.js reads it. Every other module reads the window through the
// functions below and changes it only through them (a message put at the live end, the
// history cut for a new branch, the total settled after a turn). chat.js decides how a
// message is drawn (the `build` hook given to `setUpList`).

import { byId, h, icon } from "./dom.js";
import { pickerButton, renderPickers } from "./model-picker.js";

/**
 * A tool result as a call's card shows it: the result part, where it is stored (so its
 * full output can be fetched when truncated), and the images the tool returned after it.
 * @typedef {ToolResultPartOut & {messageId: string, partIndex?: number,
 *   attachments?: AttachmentPartOut[]}} CardResult
 */

/** The loaded window [lo, hi) of the history and what it needs to draw it. */
export const view = {
  /** @type {string|null} */
  conversationId: null,
  lo: 0,
  hi: 0,
  total: 0,
  /** @type {Map<number, MessageOut>} */
  messages: new Map(),
  /** @type {Map<number, HTMLElement>} */
  elements: new Map(),
  /**
   * callId -> result part, for results drawn inside their call's card.
   * @type {Map<string, CardResult>}
   */
  results: new Map(),
  /** callId -> index of the assistant message that made the call. @type {Map<string, number>} */
  calls: new Map(),
  /** @type {number|null} */
  streamingIndex: null,
};

// The list's elements, found or made once by `setUpList`. The other window modules read
// them; only this module assigns them.
/** The scrolled view. @type {HTMLElement} */
export let scroller;
/** The list of messages inside it. @type {HTMLElement} */
export let inner;
/** The marker before the first loaded message. @type {HTMLElement} */
export let topEdge;
/** The marker after the last loaded message. @type {HTMLElement} */
export let bottomEdge;
/** The "Latest" button. @type {HTMLElement} */
export let jumpButton;

/**
 * How a message becomes an element (chat.js).
 * @type {(message: MessageOut) => HTMLElement}
 */
let build = null;

/**
 * Find the list's elements and make its edges; `buildMessage` makes the element of a
 * message (chat.js).
 * @param {(message: MessageOut) => HTMLElement} buildMessage
 */
export function setUpList(buildMessage) {
  build = buildMessage;
  scroller = byId("chat-scroll");
  inner = byId("chat-inner");
  jumpButton = byId("jump-latest");
  topEdge = h("div", { class: "page-edge top", dataset: { edge: "top" } });
  bottomEdge = h("div", { class: "page-edge bottom", dataset: { edge: "bottom" } });
}

/** The list element (fold lines are drawn into it). */
export function listElement() {
  return inner;
}

/** The marker after the last loaded message: new messages and a fold at the end go before it. */
export function endMarker() {
  return bottomEdge;
}

// ---- reading the window ----------------------------------------------------------------

/** The loaded message at index `i`, or null. */
export function messageAt(i) {
  return view.messages.get(i) ?? null;
}

/** The element of message `i` when it is loaded. */
export function elementAt(i) {
  return view.elements.get(i) ?? null;
}

/** The loaded messages' elements, by index. @returns {ReadonlyMap<number, HTMLElement>} */
export function loadedElements() {
  return view.elements;
}

/** The loaded window [lo, hi) and how many messages the history holds. */
export function windowBounds() {
  return { lo: view.lo, hi: view.hi, total: view.total };
}

/** How many messages the open conversation's history holds (loaded or not). */
export function totalMessages() {
  return view.total;
}

/** Whether a conversation's messages are shown (not the start screen). */
export function isOpen() {
  return view.conversationId !== null;
}

/** Whether message `i` is the answer being streamed. */
export function isStreaming(i) {
  return view.streamingIndex === i;
}

/** The result of a tool call, drawn inside its card, or null. @param {string} callId */
export function resultFor(callId) {
  return view.results.get(callId) ?? null;
}

/** The index of the message that made call `callId`, if it is loaded. @param {string} callId */
export function callOwner(callId) {
  return view.calls.get(callId);
}

// ---- the live end ----------------------------------------------------------------------

/**
 * Record a message of the live end: a loaded one is replaced, one just past the loaded end
 * is built and appended, one beyond it (the reader is far up) is only counted, and shown
 * on return. Returns what happened and, for a loaded message, its element to fill again;
 * "closed" when no conversation is shown.
 * @param {MessageOut} message
 * @param {boolean} streaming whether it is the answer being streamed
 * @returns {{placed: "closed"|"loaded"|"appended"|"counted"|"kept", element?: HTMLElement}}
 */
export function placeMessage(message, streaming) {
  if (!view.conversationId) {
    return { placed: "closed" };
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
    return { placed: "loaded", element: existing };
  }
  if (message.index < view.hi) {
    return { placed: "kept" };
  }
  if (view.hi !== view.total) {
    // The person is reading far up; the message is counted and shown on return.
    view.total = Math.max(view.total, message.index + 1);
    updateEdges();
    return { placed: "counted" };
  }
  bottomEdge.before(buildElement(message));
  view.hi = message.index + 1;
  view.total = Math.max(view.total, view.hi);
  return { placed: "appended" };
}

/**
 * Record a result that arrived before its tool message; returns the index of the message
 * whose card shows it.
 * @param {CardResult} result
 */
export function recordResult(result) {
  view.results.set(result.callId, result);
  return view.calls.get(result.callId);
}

/**
 * Drop message `i` and everything after it from the window (a new branch grows from
 * there); false when `i` is outside it.
 */
export function cutAt(i) {
  if (!view.conversationId || i < view.lo || i > view.hi) {
    return false;
  }
  for (let at = view.hi - 1; at >= i; at--) {
    removeIndex(at);
  }
  view.hi = i;
  view.total = i;
  view.streamingIndex = null;
  return true;
}

/** Drop message `i` when it is the last one (one only this page had). */
export function dropLast(i) {
  if (i === view.hi - 1 && i === view.total - 1) {
    removeIndex(i);
    view.hi--;
    view.total--;
    updateEdges();
  }
}

/**
 * The history holds `total` messages (the server's count after a turn): nothing streams,
 * and messages past it (an optimistic one the server refused) go.
 */
export function settleTotal(total) {
  view.streamingIndex = null;
  for (let i = total; i < view.hi; i++) {
    removeIndex(i);
  }
  view.hi = Math.min(view.hi, total);
  view.total = total;
}

// ---- the window's own bookkeeping ------------------------------------------------------

/**
 * An empty window for conversation `conversationId` (its pages are still to come), or
 * for none (the start screen).
 * @param {string|null} conversationId
 */
export function emptyWindow(conversationId) {
  view.conversationId = conversationId;
  view.messages.clear();
  view.elements.clear();
  view.results.clear();
  view.calls.clear();
}

/** The element of `message`, recorded as its element. @param {MessageOut} message */
function buildElement(message) {
  const element = build(message);
  view.elements.set(message.index, element);
  return element;
}

/**
 * Record a fetched page's messages in the view (their calls and results too).
 * @param {MessageOut[]} messages
 */
export function recordMessages(messages) {
  for (const message of messages) {
    view.messages.set(message.index, message);
    index(message);
  }
}

/**
 * The elements of `messages`, in order, in a fragment.
 * @param {MessageOut[]} messages
 */
export function buildAll(messages) {
  const fragment = document.createDocumentFragment();
  for (const message of messages) {
    fragment.append(buildElement(message));
  }
  return fragment;
}

/** Note the calls and results of a message, so cards find their results. */
function index(message) {
  let lastResult = null;
  (message.parts ?? []).forEach((part, partIndex) => {
    if (part.kind === "tool-call") {
      view.calls.set(part.id, message.index);
    } else if (part.kind === "tool-result") {
      // Where the result is stored, so its full output can be fetched when truncated.
      lastResult = { ...part, messageId: message.id, partIndex, attachments: [] };
      view.results.set(part.callId, lastResult);
    } else if (part.kind === "attachment" && lastResult) {
      // Images a tool returned follow its result in the tool message.
      lastResult.attachments.push(part);
    }
  });
}

function forget(message) {
  for (const part of message.parts ?? []) {
    if (part.kind === "tool-call" && view.calls.get(part.id) === message.index) {
      view.calls.delete(part.id);
    }
  }
}

/** Forget message `i` and remove its element (the bounds are the caller's to move). */
export function removeIndex(i) {
  const message = view.messages.get(i);
  if (message) {
    forget(message);
  }
  view.messages.delete(i);
  view.elements.get(i)?.remove();
  view.elements.delete(i);
}

/** The start screen: no conversation, an empty window. */
export function showEmpty() {
  emptyWindow(null);
  view.lo = view.hi = view.total = 0;
  inner.replaceChildren(
    h(
      "div",
      { class: "empty-state" },
      h(
        "div",
        {},
        h("div", { class: "mark" }),
        h("h2", { text: "Long conversations, nothing lost" }),
        h("p", {
          text: "You always see the whole history. When the model's context fills up, older messages fold into a summary, and a line shows exactly where.",
        }),
        h(
          "div",
          { class: "start-model" },
          h("span", { class: "start-model-label", text: "Model" }),
          pickerButton("start-model-picker"),
        ),
      ),
    ),
  );
  renderPickers();
  jumpButton.hidden = true;
}

export function updateEdges() {
  // The loaded window, for people debugging and for the browser tests.
  inner.dataset.lo = String(view.lo);
  inner.dataset.hi = String(view.hi);
  inner.dataset.total = String(view.total);
  topEdge.replaceChildren();
  if (view.lo > 0) {
    topEdge.append(
      icon("loader", "small spin"),
      `Loading earlier messages (${view.lo.toLocaleString("en-US")} more)`,
    );
  } else if (view.total > 0) {
    topEdge.append("Beginning of the conversation");
  } else if (view.conversationId) {
    topEdge.append("No messages yet. Everything you send stays in this history, even once folded.");
  }
  bottomEdge.replaceChildren();
  if (view.hi < view.total) {
    bottomEdge.append(icon("loader", "small spin"), "Loading newer messages");
  }
  updateJumpButton();
}

/** "Latest" is offered while newer messages are unloaded or the end is out of sight. */
export function updateJumpButton() {
  jumpButton.hidden = view.hi === view.total && distanceFromBottom() < 400;
}

/** How far the end of the list is below the bottom of the view, in pixels. */
export function distanceFromBottom() {
  return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight;
}
