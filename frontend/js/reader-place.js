// The reader's place in the message list: the text under the reader never moves by itself.
//
// The list remembers the message at the top of the screen and where it was (`anchor`);
// when a page is added or dropped above it, or heights settle (code highlighted as it
// nears the screen, fonts, a window resize), a ResizeObserver on the list and the view
// puts that message back where it was before the frame is painted. At the end of the
// list the view stays at the end, until the person scrolls up.
//
// This is apart from the window's pages (chat-paging.js) because everything that changes
// the list's height needs it, not only paging: the live end, fold lines, a version of a
// message shown instead of another. It reads the loaded window (chat-window.js) to find
// the message at the top, and its own state (`place`) is changed only here.

import { distanceFromBottom, inner, scroller, view } from "./chat-window.js";
import { markTerms } from "./dom.js";

/** Where the reader is. */
const place = {
  stickToBottom: true,
  /**
   * The message at the top of the screen and its offset from the scroller's top.
   * @type {{element: HTMLElement, offset: number}|null}
   */
  anchor: null,
  lastScrollTop: 0,
};

/** Keep the place whenever the list or the view changes size. */
export function keepPlaceOnResize() {
  // The list grows or shrinks (pages, settling heights), or the view does (the composer
  // grows, the window is resized): either way the reader keeps their place.
  const resizes = new ResizeObserver(holdPosition);
  resizes.observe(inner);
  resizes.observe(scroller);
}

/** Whether the view follows the end of the history (the reader has not scrolled up). */
export function followsEnd() {
  return place.stickToBottom;
}

/**
 * Where the person is reading: the message at the top of the view (null when none is
 * drawn), and whether they are at the end.
 * @returns {{top: HTMLElement|null, atEnd: boolean}}
 */
export function readerPlace() {
  return { top: place.anchor?.element ?? null, atEnd: place.stickToBottom };
}

/**
 * The person scrolled (or the content moved the scroll): note whether they left the end
 * or came back to it, and the message now at the top.
 */
export function noteScroll() {
  // Only the person scrolling up leaves the end: content growing below the view (fonts,
  // highlighting, a streamed answer) fires scroll events too, and must not unstick it.
  if (scroller.scrollTop < place.lastScrollTop - 1) {
    place.stickToBottom = false;
  }
  if (distanceFromBottom() < 80) {
    place.stickToBottom = true;
  }
  recordAnchor();
}

export function scrollToBottom() {
  scroller.scrollTop = scroller.scrollHeight;
  place.stickToBottom = true;
  recordAnchor();
}

/**
 * Put `element` `offset` pixels below the top of the view, where the person was looking
 * (another version of a message was chosen); the end is followed only if it is in sight.
 * @param {HTMLElement} element
 * @param {number} offset
 */
export function putAt(element, offset) {
  scroller.scrollTop += offsetInView(element) - offset;
  place.stickToBottom = distanceFromBottom() < 80;
  recordAnchor();
}

/**
 * Scroll a search match to the middle of the view and mark it; the reader stays there.
 * @param {HTMLElement} element
 * @param {string[]} terms
 */
export function showMatch(element, terms) {
  element.classList.add("search-hit");
  markTerms(element, terms);
  place.stickToBottom = false;
  element.scrollIntoView({ block: "center" });
  recordAnchor();
}

/** Remember which message is at the top of the screen, and where. */
function recordAnchor() {
  place.lastScrollTop = scroller.scrollTop;
  const element = anchorElement();
  place.anchor = element ? { element, offset: offsetInView(element) } : null;
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
  if (place.stickToBottom) {
    scroller.scrollTop = scroller.scrollHeight;
    recordAnchor();
    return;
  }
  const anchor = place.anchor;
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

/**
 * Run a DOM change and keep the element the person is looking at where it was.
 * @param {() => void} change
 */
export function keepingPosition(change) {
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
