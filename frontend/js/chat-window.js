// The loaded window of the display history: pages in and out, and the reader's place.
//
// A conversation may hold tens of thousands of messages, so the view never loads or
// draws them all. It opens on the newest page, loads older pages as the person scrolls
// up and newer ones as they scroll back down, and keeps at most MAX_LOADED messages in
// the DOM by dropping pages at the far end. chat.js decides how a message is drawn (the
// `build` hook) and draws the fold lines after every change (the `afterPage` hook).
//
// The text under the reader never moves by itself. The view remembers the message at the
// top of the screen and where it was (`anchor`); when a page is added or dropped above
// it, or heights settle (code highlighted as it nears the screen, fonts, a window
// resize), a ResizeObserver on the list and the view puts that message back where it
// was before the frame is painted. At the end of the list the view stays at the end.
//
// The window's bookkeeping (`view`) is this module's alone: chat.js and the others read it
// through the functions below and change it only through them (a message put at the live
// end, the history cut for a new branch, the total settled after a turn).

import { api } from "./api.js";
import { byId, h, icon, markTerms } from "./dom.js";
import { pickerButton, renderPickers } from "./model-picker.js";
import { notifyError } from "./notices.js";

export const PAGE_SIZE = 50;
/** Messages drawn before the first paint when a conversation opens at its newest message. */
const FIRST_SCREEN = 10;
const MAX_LOADED = 400;
const EDGE_PX = 800;

/**
 * A tool result as a call's card shows it: the result part, where it is stored (so its
 * full output can be fetched when truncated), and the images the tool returned after it.
 * @typedef {ToolResultPartOut & {messageId: string, partIndex?: number,
 *   attachments?: AttachmentPartOut[]}} CardResult
 */

/** The loaded window [lo, hi) of the history and what it needs to draw it. */
const view = {
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
  loading: false,
  /** Incremented on every open, so answers for a conversation left behind are dropped. */
  generation: 0,
  stickToBottom: true,
  /**
   * The message at the top of the screen and its offset from the scroller's top.
   * @type {{element: HTMLElement, offset: number}|null}
   */
  anchor: null,
  lastScrollTop: 0,
  /** @type {number|null} */
  streamingIndex: null,
  /**
   * Messages of the first page loaded but not drawn yet (drawn after the first paint).
   * @type {MessageOut[]}
   */
  rest: [],
};

let scroller;
let inner;
let topEdge;
let bottomEdge;
let jumpButton;

/**
 * How a message becomes an element, and what to redraw after the list changed.
 * @type {{build: (message: MessageOut) => HTMLElement, afterPage: () => void}}
 */
const hooks = { build: null, afterPage: () => {} };

/**
 * Set up the list: `build` makes the element of a message (chat.js), `afterPage` redraws
 * what depends on the loaded messages (the fold lines) after a page came or went.
 * @param {{build: (message: MessageOut) => HTMLElement, afterPage: () => void}} drawing
 */
export function initWindow({ build, afterPage }) {
  Object.assign(hooks, { build, afterPage });
  scroller = byId("chat-scroll");
  inner = byId("chat-inner");
  jumpButton = byId("jump-latest");
  topEdge = h("div", { class: "page-edge top", dataset: { edge: "top" } });
  bottomEdge = h("div", { class: "page-edge bottom", dataset: { edge: "bottom" } });
  scroller.addEventListener("scroll", onScroll, { passive: true });
  // The list grows or shrinks (pages, settling heights), or the view does (the composer
  // grows, the window is resized): either way the reader keeps their place.
  const resizes = new ResizeObserver(holdPosition);
  resizes.observe(inner);
  resizes.observe(scroller);
  jumpButton.addEventListener("click", () => jumpToLatest());
  showEmpty();
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

/** Whether the view follows the end of the history (the reader has not scrolled up). */
export function followsEnd() {
  return view.stickToBottom;
}

/**
 * Where the person is reading: the message at the top of the view (null when none is
 * drawn), and whether they are at the end.
 * @returns {{top: HTMLElement|null, atEnd: boolean}}
 */
export function readerPlace() {
  return { top: view.anchor?.element ?? null, atEnd: view.stickToBottom };
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

/** The element of `message`, recorded as its element. @param {MessageOut} message */
function buildElement(message) {
  const element = hooks.build(message);
  view.elements.set(message.index, element);
  return element;
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

/** The start screen: no conversation, an empty window (a page still arriving is dropped). */
export function closeWindow() {
  view.generation++;
  showEmpty();
}

function showEmpty() {
  view.conversationId = null;
  view.messages.clear();
  view.elements.clear();
  view.results.clear();
  view.calls.clear();
  view.lo = view.hi = view.total = 0;
  view.rest = [];
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
  jumpButton.hidden = view.hi === view.total && distanceFromBottom() < 400;
}

function distanceFromBottom() {
  return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight;
}

export function scrollToBottom() {
  scroller.scrollTop = scroller.scrollHeight;
  view.stickToBottom = true;
  recordAnchor();
}

/** Remember which message is at the top of the screen, and where. */
function recordAnchor() {
  view.lastScrollTop = scroller.scrollTop;
  const element = anchorElement();
  view.anchor = element ? { element, offset: offsetInView(element) } : null;
}

/** How far below the top of the scrolled view an element starts. */
export function offsetInView(element) {
  return element.getBoundingClientRect().top - scroller.getBoundingClientRect().top;
}

/** After the list changed size: stay at the end, or put the anchor back where it was. */
function holdPosition() {
  if (!view.conversationId) {
    return;
  }
  if (view.stickToBottom) {
    scroller.scrollTop = scroller.scrollHeight;
    recordAnchor();
    return;
  }
  const anchor = view.anchor;
  if (anchor?.element.isConnected) {
    const delta = offsetInView(anchor.element) - anchor.offset;
    if (Math.abs(delta) >= 1) {
      scroller.scrollTop += delta;
    }
  }
  recordAnchor();
}

/** The first message element whose bottom is below the top of the viewport. */
function anchorElement() {
  const top = scroller.getBoundingClientRect().top;
  for (let i = view.lo; i < view.hi; i++) {
    const element = view.elements.get(i);
    if (element && element.getBoundingClientRect().bottom > top) {
      return element;
    }
  }
  return null;
}

/** Run a DOM change and keep the element the person is looking at where it was. */
function keepingPosition(change) {
  const anchor = anchorElement();
  const before = anchor ? anchor.getBoundingClientRect().top : 0;
  change();
  if (anchor?.isConnected) {
    const delta = anchor.getBoundingClientRect().top - before;
    if (delta !== 0) {
      scroller.scrollTop += delta;
    }
  }
  recordAnchor();
}

/** Messages [offset, offset + limit) of the open conversation, or null if another opened. */
export async function fetchPage(offset, limit) {
  return pageOfThisOpen(api.listMessages(view.conversationId, { offset, limit }));
}

/** The newest page of a conversation (opening.js asks for it with the conversation). */
export function fetchNewest(conversationId) {
  return api.listMessages(conversationId, { limit: PAGE_SIZE, newest: true });
}

/** A page being fetched, or null once it arrives if another open came first. */
async function pageOfThisOpen(fetching) {
  const generation = view.generation;
  const { messages, total } = await fetching;
  return generation === view.generation ? { messages, total } : null;
}

/** The first page to open on (`newest`: the newest page, already asked for), or null. */
async function firstPage(conversation, at, newest) {
  if (at === null) {
    return pageOfThisOpen(newest ?? fetchNewest(conversation.id));
  }
  return fetchPage(Math.max(0, at - PAGE_SIZE / 2), PAGE_SIZE);
}

/**
 * Open a conversation on its newest page, or on the page around message `at`: a search
 * result is scrolled to the middle with the search `terms` marked; with `offset` (another
 * version of a message was chosen) message `at` is put that far below the top of the view,
 * where the person was looking. `newest`: the newest page, when it was already asked for.
 * @param {Pick<ConversationOut, "id">} conversation
 */
export async function openWindow(
  conversation,
  { at = null, terms = [], offset = null, newest = null } = {},
) {
  view.generation++;
  const generation = view.generation;
  view.conversationId = conversation.id;
  view.messages.clear();
  view.elements.clear();
  view.results.clear();
  view.calls.clear();
  view.streamingIndex = null;
  view.rest = [];
  if (offset === null) {
    inner.replaceChildren(
      h("div", { class: "page-edge" }, icon("loader", "small spin"), "Loading…"),
    );
  }
  // Otherwise (another version of a message is being shown) the old list stays on screen
  // until the new one replaces it, so the history does not blink; it must not page then.
  setLoading(true);
  let page;
  try {
    page = await firstPage(conversation, at, newest);
  } finally {
    if (generation === view.generation) {
      setLoading(false);
    }
  }
  if (!page) {
    return;
  }
  const total = page.total;
  const messages = page.messages;
  view.total = Math.max(total, messages.length ? messages.at(-1).index + 1 : 0);
  view.lo = messages.length ? messages[0].index : view.total;
  view.hi = messages.length ? messages.at(-1).index + 1 : view.total;
  for (const message of messages) {
    view.messages.set(message.index, message);
    index(message);
  }
  // At the newest message only what fills the screen is drawn before the first paint;
  // the rest of the page follows after it, above the screen (see `drawRest`).
  const drawn = at === null ? messages.slice(-FIRST_SCREEN) : messages;
  view.rest = messages.slice(0, messages.length - drawn.length);
  inner.replaceChildren(topEdge, buildAll(drawn), bottomEdge);
  // Short messages may not fill the screen: more are drawn until they do, so no empty
  // space is ever painted above them.
  while (view.rest.length && inner.offsetHeight < scroller.clientHeight * 2) {
    topEdge.after(buildAll(view.rest.slice(-FIRST_SCREEN)));
    view.rest = view.rest.slice(0, -FIRST_SCREEN);
  }
  hooks.afterPage();
  updateEdges();
  const target = at === null ? null : view.elements.get(at);
  if (target && offset !== null) {
    scroller.scrollTop += offsetInView(target) - offset;
    view.stickToBottom = distanceFromBottom() < 80;
    recordAnchor();
    return;
  }
  if (target) {
    showMatch(target, terms);
    return;
  }
  scrollToBottom();
  // Images, fonts and highlighting can change heights after the first layout. The rest
  // of the page is drawn after the frame is painted (a timer set in the frame runs after it).
  requestAnimationFrame(() => {
    if (view.stickToBottom) {
      scrollToBottom();
    }
    setTimeout(() => drawRest(generation), 0);
  });
}

/**
 * The older messages of the first page, drawn above the ones on screen once those are
 * painted, a screenful per task (the page stays responsive meanwhile) and with the
 * reader's place kept. Until all are drawn no older page is fetched.
 */
function drawRest(generation) {
  if (generation !== view.generation) {
    return;
  }
  const chunk = view.rest.slice(-FIRST_SCREEN);
  view.rest = view.rest.slice(0, -FIRST_SCREEN);
  const drawChunk = () => {
    topEdge.after(buildAll(chunk));
    hooks.afterPage();
  };
  if (chunk.length && view.stickToBottom) {
    // At the end the end is kept, whatever else changed height meanwhile (a font).
    drawChunk();
    scrollToBottom();
  } else if (chunk.length) {
    keepingPosition(drawChunk);
  }
  if (view.rest.length) {
    setTimeout(() => drawRest(generation), 0);
  } else if (view.lo > 0 && (view.hi - view.lo < PAGE_SIZE || scroller.scrollTop < EDGE_PX)) {
    // A short page, or a reader who reached the top meanwhile: no scroll will ask for it.
    loadOlder();
  }
}

/** The elements of `messages`, in order, in a fragment. */
function buildAll(messages) {
  const fragment = document.createDocumentFragment();
  for (const message of messages) {
    fragment.append(buildElement(message));
  }
  return fragment;
}

/** A page is being fetched (also marked on the list, for the browser tests). */
function setLoading(loading) {
  view.loading = loading;
  inner.dataset.loading = String(loading);
}

/** Scroll a search match to the middle of the view and mark it; the reader stays there. */
function showMatch(element, terms) {
  element.classList.add("search-hit");
  markTerms(element, terms);
  view.stickToBottom = false;
  element.scrollIntoView({ block: "center" });
  recordAnchor();
}

async function loadOlder() {
  if (view.loading || view.rest.length || view.lo === 0 || !view.conversationId) {
    return;
  }
  setLoading(true);
  try {
    const offset = Math.max(0, view.lo - PAGE_SIZE);
    const page = await fetchPage(offset, view.lo - offset);
    if (!page) {
      return;
    }
    const messages = page.messages.filter((m) => m.index < view.lo);
    if (!messages.length) {
      view.lo = 0;
      updateEdges();
      return;
    }
    keepingPosition(() => {
      topEdge.after(pageFragment(messages));
      view.lo = messages[0].index;
      trimBottom();
      hooks.afterPage();
      updateEdges();
    });
  } catch (error) {
    notifyError("Could not load earlier messages", error);
  } finally {
    setLoading(false);
  }
}

/** Record a fetched page's messages in the view and build their elements, in order. */
function pageFragment(messages) {
  for (const message of messages) {
    view.messages.set(message.index, message);
    index(message);
  }
  return buildAll(messages);
}

async function loadNewer() {
  if (view.loading || view.hi >= view.total || !view.conversationId) {
    return;
  }
  setLoading(true);
  try {
    const page = await fetchPage(view.hi, PAGE_SIZE);
    if (!page) {
      return;
    }
    view.total = page.total;
    const messages = page.messages.filter((m) => m.index >= view.hi);
    if (!messages.length) {
      view.total = view.hi;
      updateEdges();
      return;
    }
    keepingPosition(() => {
      bottomEdge.before(pageFragment(messages));
      view.hi = messages.at(-1).index + 1;
      trimTop();
      hooks.afterPage();
      updateEdges();
    });
  } catch (error) {
    notifyError("Could not load newer messages", error);
  } finally {
    setLoading(false);
  }
}

function removeIndex(i) {
  const message = view.messages.get(i);
  if (message) {
    forget(message);
  }
  view.messages.delete(i);
  view.elements.get(i)?.remove();
  view.elements.delete(i);
}

function trimBottom() {
  while (view.hi - view.lo > MAX_LOADED) {
    view.hi--;
    removeIndex(view.hi);
  }
}

function trimTop() {
  while (view.hi - view.lo > MAX_LOADED) {
    removeIndex(view.lo);
    view.lo++;
  }
}

function onScroll() {
  // Only the person scrolling up leaves the end: content growing below the view (fonts,
  // highlighting, a streamed answer) fires scroll events too, and must not unstick it.
  if (scroller.scrollTop < view.lastScrollTop - 1) {
    view.stickToBottom = false;
  }
  if (distanceFromBottom() < 80) {
    view.stickToBottom = true;
  }
  recordAnchor();
  if (scroller.scrollTop < EDGE_PX && view.lo > 0) {
    loadOlder();
  } else if (distanceFromBottom() < EDGE_PX && view.hi < view.total) {
    loadNewer();
  }
  jumpButton.hidden = view.hi === view.total && distanceFromBottom() < 400;
}

/** Reopen on the newest page (after scrolling far up, or before a new turn). */
export async function jumpToLatest() {
  if (!view.conversationId) {
    return;
  }
  if (view.hi === view.total) {
    scrollToBottom();
    return;
  }
  await openWindow({ id: view.conversationId });
}
