// The pages of the loaded window: which part of the history is loaded, and when.
//
// The view opens on the newest page (or the page around a message asked for), loads
// older pages as the person scrolls up and newer ones as they scroll back down, and keeps
// at most MAX_LOADED messages in the DOM by dropping pages at the far end. The window it
// moves is chat-window.js's; every page added or dropped goes through reader-place.js so
// the text under the reader stays where it was. This module sits above both: it sets the
// list up (`initWindow`), and chat.js redraws what depends on the loaded messages (the
// fold lines) after every page (the `afterPage` hook).
//
// Its own state is the paging's: whether a page is being fetched, the first page's
// messages still to draw, and the generation that drops answers for a conversation left.

import { api } from "./api.js";
import {
  bottomEdge,
  buildAll,
  distanceFromBottom,
  emptyWindow,
  inner,
  jumpButton,
  recordMessages,
  removeIndex,
  scroller,
  setUpList,
  showEmpty,
  topEdge,
  updateEdges,
  updateJumpButton,
  view,
} from "./chat-window.js";
import { h, icon } from "./dom.js";
import { notifyError } from "./notices.js";
import {
  followsEnd,
  keepingPosition,
  keepPlaceOnResize,
  noteScroll,
  putAt,
  scrollToBottom,
  showMatch,
} from "./reader-place.js";

export const PAGE_SIZE = 50;
/** Messages drawn before the first paint when a conversation opens at its newest message. */
const FIRST_SCREEN = 10;
const MAX_LOADED = 400;
const EDGE_PX = 800;

/** The paging's own state. */
const paging = {
  loading: false,
  /** Incremented on every open, so answers for a conversation left behind are dropped. */
  generation: 0,
  /**
   * Messages of the first page loaded but not drawn yet (drawn after the first paint).
   * @type {MessageOut[]}
   */
  rest: [],
};

/** What to redraw after the list changed (chat.js: the fold lines). */
let afterPage = () => {};

/**
 * Set up the list: `build` makes the element of a message (chat.js), `afterPage` redraws
 * what depends on the loaded messages (the fold lines) after a page came or went.
 * @param {{build: (message: MessageOut) => HTMLElement, afterPage: () => void}} drawing
 */
export function initWindow(drawing) {
  afterPage = drawing.afterPage;
  setUpList(drawing.build);
  scroller.addEventListener("scroll", onScroll, { passive: true });
  keepPlaceOnResize();
  jumpButton.addEventListener("click", () => jumpToLatest());
  showEmpty();
}

/** The start screen: no conversation, an empty window (a page still arriving is dropped). */
export function closeWindow() {
  paging.generation++;
  paging.rest = [];
  showEmpty();
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
  const generation = paging.generation;
  const { messages, total } = await fetching;
  return generation === paging.generation ? { messages, total } : null;
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
  paging.generation++;
  const generation = paging.generation;
  emptyWindow(conversation.id);
  view.streamingIndex = null;
  paging.rest = [];
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
    if (generation === paging.generation) {
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
  recordMessages(messages);
  // At the newest message only what fills the screen is drawn before the first paint;
  // the rest of the page follows after it, above the screen (see `drawRest`).
  const drawn = at === null ? messages.slice(-FIRST_SCREEN) : messages;
  paging.rest = messages.slice(0, messages.length - drawn.length);
  inner.replaceChildren(topEdge, buildAll(drawn), bottomEdge);
  // Short messages may not fill the screen: more are drawn until they do, so no empty
  // space is ever painted above them.
  while (paging.rest.length && inner.offsetHeight < scroller.clientHeight * 2) {
    topEdge.after(buildAll(paging.rest.slice(-FIRST_SCREEN)));
    paging.rest = paging.rest.slice(0, -FIRST_SCREEN);
  }
  afterPage();
  updateEdges();
  const target = at === null ? null : view.elements.get(at);
  if (target && offset !== null) {
    putAt(target, offset);
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
    if (followsEnd()) {
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
  if (generation !== paging.generation) {
    return;
  }
  const chunk = paging.rest.slice(-FIRST_SCREEN);
  paging.rest = paging.rest.slice(0, -FIRST_SCREEN);
  const drawChunk = () => {
    topEdge.after(buildAll(chunk));
    afterPage();
  };
  if (chunk.length && followsEnd()) {
    // At the end the end is kept, whatever else changed height meanwhile (a font).
    drawChunk();
    scrollToBottom();
  } else if (chunk.length) {
    keepingPosition(drawChunk);
  }
  if (paging.rest.length) {
    setTimeout(() => drawRest(generation), 0);
  } else if (view.lo > 0 && (view.hi - view.lo < PAGE_SIZE || scroller.scrollTop < EDGE_PX)) {
    // A short page, or a reader who reached the top meanwhile: no scroll will ask for it.
    loadOlder();
  }
}

/** A page is being fetched (also marked on the list, for the browser tests). */
function setLoading(loading) {
  paging.loading = loading;
  inner.dataset.loading = String(loading);
}

async function loadOlder() {
  if (paging.loading || paging.rest.length || view.lo === 0 || !view.conversationId) {
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
      afterPage();
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
  recordMessages(messages);
  return buildAll(messages);
}

async function loadNewer() {
  if (paging.loading || view.hi >= view.total || !view.conversationId) {
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
      afterPage();
      updateEdges();
    });
  } catch (error) {
    notifyError("Could not load newer messages", error);
  } finally {
    setLoading(false);
  }
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
  noteScroll();
  if (scroller.scrollTop < EDGE_PX && view.lo > 0) {
    loadOlder();
  } else if (distanceFromBottom() < EDGE_PX && view.hi < view.total) {
    loadNewer();
  }
  updateJumpButton();
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
