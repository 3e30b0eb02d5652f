// Following the open conversation wherever it changes: another window, another client.
// One watch stream per page (GET /api/conversations/ID/watch) says when a turn starts,
// and the page then follows it live as after a reload (turn.js followRunning); when it
// ends, the page re-reads what is stored. Every other change (a version switch, a pin, a
// fold undone or brought back, a rename or new settings, a hand-off, a deletion) comes as
// `conversation.changed`, and the page redraws from the store where the person was
// reading; changes to other conversations come as `conversations.changed`, and the
// sidebar is re-read. Changes this page made itself (the stream names the page, see
// api.js pageId) are already on screen.
//
// A change is held back while a turn runs here, and one that redraws the messages while
// a message is being edited, until that is over, so neither is disturbed; the composer
// is never touched. Each change
// has a revision: the stream's first event gives the conversation's newest, and a page
// that drew an older one (it was hidden, or the stream broke) catches up.

import { api, pageId } from "./api.js";
import { app } from "./app.js";
import * as chat from "./chat.js";
import { notify } from "./notices.js";
import { offsetInView, readerPlace } from "./reader-place.js";
import { state, update } from "./state.js";
import { followRunning, isRunning } from "./turn.js";

/** The stream being read: which conversation, and how to stop it. */
let watching = null;

export function initWatch() {
  // A hidden tab lets its stream go (a browser allows six connections per server, and
  // every open tab would hold one), and picks the conversation up again when shown: the
  // stream's first event says whether it changed meanwhile.
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") {
      paused = watching ? { id: watching.id } : paused;
      watching?.controller.abort();
      watching = null;
    } else if (paused) {
      const { id } = paused;
      paused = null;
      watchConversation(id);
    }
  });
  window.addEventListener("focus", () => refreshIfChanged());
}

/** Whether the turn announced last was started by this page. */
let ownTurn = false;

/** What a hidden tab stopped watching (`{id}`), to watch again once shown. */
let paused = null;

/** The conversation drawn and the revision of its newest change drawn. */
let drawn = { id: null, revision: -1 };

/**
 * Watch conversation `id` instead of what was watched so far; null: no conversation is
 * shown, and only the list is watched.
 */
export function watchConversation(id) {
  if (document.visibilityState === "hidden") {
    paused = { id };
    return;
  }
  if (watching && watching.id === id) {
    return;
  }
  watching?.controller.abort();
  watching = { id, controller: new AbortController(), opened: false };
  run(watching);
}

async function run(watch) {
  let delay = 1000;
  while (watching === watch) {
    try {
      const events = await api.watch(watch.id, watch.controller.signal);
      delay = 1000;
      for await (const { name, data } of events) {
        if (watching !== watch) {
          return;
        }
        await heard(watch, name, data ?? {});
      }
    } catch (error) {
      if (watching !== watch || error.name === "AbortError" || error.status === 404) {
        return;
      }
    }
    // The stream broke (the server restarted, the network dropped): try again, slower;
    // the new stream's first event says whether anything changed meanwhile.
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 15000);
  }
}

/** Act on one event of the watch stream `watch`. */
async function heard(watch, name, data) {
  const id = watch.id;
  if (name === "watch.opened" && id === null) {
    if (watch.opened) {
      // Back after a break: the list may have changed meanwhile.
      listChanged("missed");
    }
    watch.opened = true;
  } else if (name === "watch.opened") {
    if (drawn.id !== id) {
      // Just opened: what is on screen was read at the conversation's revision then.
      const shown = state.conversation?.id === id ? state.conversation.revision : -1;
      drawn = { id, revision: shown ?? -1 };
    }
    if (data.revision !== drawn.revision) {
      hold(id, "missed");
    }
  } else if (name === "turn.started") {
    // A turn this page runs is re-read by the page itself when it ends (turn.js); one
    // from elsewhere is followed live, then checked against the store.
    ownTurn = isRunning();
    if (!ownTurn && !editing()) {
      followRunning(id).then(() => refreshIfChanged());
    } else if (!ownTurn) {
      hold(id, "turn");
    }
  } else if (name === "turn.finished") {
    if (!ownTurn && pending) {
      hold(id, "turn");
    } else if (!ownTurn && !isRunning()) {
      await refreshIfChanged();
    }
  } else if (name === "conversation.changed") {
    if (data.origin !== pageId) {
      hold(id, data.kind);
    }
  } else if (name === "conversations.changed") {
    if (data.origin !== pageId) {
      listChanged(data.kind);
    }
  }
  if (typeof data.revision === "number" && !pending) {
    drawn.revision = data.revision;
  }
}

/** Re-read the open conversation when the stored one differs from what is shown. */
function refreshIfChanged() {
  return app.reread({ ifChanged: true });
}

// ---- changes made elsewhere ---------------------------------------------------------

/** Changes that redraw the messages (the others leave them as they are). */
const REDRAWN = new Set(["branch", "turn", "missed"]);

/** The changes not drawn yet (`{id, kinds}`: the conversation and the kinds), or null. */
let pending = null;
let timer = 0;
let drawing = false;

/** A message is being edited here (a redraw of the messages would take the editor away). */
function editing() {
  return document.querySelector("#chat-inner .message-editor") !== null;
}

/** Draw a change once the page is quiet (at once when it is). */
function hold(id, kind) {
  if (pending?.id !== id) {
    // Those of a conversation no longer shown are dropped: it is read afresh when opened.
    pending = { id, kinds: new Set() };
  }
  pending.kinds.add(kind);
  if (!timer) {
    timer = setTimeout(drawPending, 0);
  }
}

async function drawPending() {
  timer = 0;
  if (!pending) {
    return;
  }
  const redraws = [...pending.kinds].some((kind) => REDRAWN.has(kind));
  if (drawing || isRunning() || state.busy || (redraws && editing())) {
    timer = setTimeout(drawPending, 300);
    return;
  }
  const { id, kinds } = pending;
  pending = null;
  drawing = true;
  try {
    await catchUp(id, kinds);
  } finally {
    drawing = false;
  }
}

/** Show what is stored now of conversation `id` after changes of `kinds`, if still open. */
async function catchUp(id, kinds) {
  if (!id || id !== state.currentId) {
    return;
  }
  if (kinds.has("deleted")) {
    leaveDeleted();
    return;
  }
  let stored;
  try {
    stored = await api.getConversation(id);
  } catch (error) {
    if (error.status === 404 && id === state.currentId) {
      leaveDeleted();
    }
    return;
  }
  if (id !== state.currentId) {
    return;
  }
  update({ conversation: stored });
  const messages = [...kinds].some((kind) => REDRAWN.has(kind));
  await Promise.all([
    messages ? redrawKeepingPlace(stored) : null,
    app.refreshFolds(),
    app.refreshContext(),
    app.refreshList(),
  ]);
  chat.renderFolds();
  if (drawn.id === id) {
    drawn.revision = stored.revision;
  }
}

/**
 * Draw the stored history again where the person was reading: the message at the top of
 * the view stays there (the last one, when a switch made the history shorter), and a
 * reader at the end stays at the end.
 * @param {ConversationOut} stored
 */
async function redrawKeepingPlace(stored) {
  const total = stored.messageCount;
  const place = readerPlace();
  const top = place.top;
  const atEnd = place.atEnd || !top?.isConnected;
  if (total === 0) {
    await chat.openConversation(stored, {});
    return;
  }
  const at = atEnd ? total - 1 : Math.min(Number(top.dataset.index), total - 1);
  const offset = atEnd ? 0 : offsetInView(top);
  await chat.openConversation(stored, { at, offset });
  if (atEnd) {
    await chat.jumpToLatest();
  }
}

function leaveDeleted() {
  const title = state.conversation?.title;
  app.showEmptyState();
  app.refreshList();
  notify({
    kind: "info",
    title: "Conversation deleted",
    text: `“${title || "Untitled"}” was deleted in another window.`,
  });
}

let listTimer = 0;

/** Another conversation changed what the list shows: read it again (once for a burst). */
function listChanged(kind) {
  clearTimeout(listTimer);
  listTimer = setTimeout(() => app.refreshList(), 100);
  if (kind === "project" && state.conversation?.projectId) {
    // Its project's instructions, files or notes may have changed, or the project (and
    // so this conversation) was deleted.
    hold(state.currentId, "updated");
  }
}
