// Following the open conversation wherever its turns start: another window, another
// client. One watch stream per page (GET /api/conversations/ID/watch) says when a turn
// starts, and the page then follows it live as after a reload (turn.js followRunning);
// when it ends, the page re-reads what is stored. Coming back to the page (focus, a
// visible tab) also re-reads it when the stored conversation changed meanwhile, so a
// page never shows a history that is not the stored one.

import { api } from "./api.js";
import { followRunning, isRunning } from "./turn.js";

/** The stream being read: which conversation, and how to stop it. */
let watching = null;
let reread = async () => {};

/** `refresh({ifChanged})` re-reads the open conversation (opening.js rereadConversation). */
export function initWatch({ refresh }) {
  reread = refresh;
  // A hidden tab lets its stream go (a browser allows six connections per server, and
  // every open tab would hold one), and picks the conversation up again when shown.
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") {
      paused = watching?.id ?? paused;
      watching?.controller.abort();
      watching = null;
    } else if (paused) {
      const id = paused;
      paused = null;
      watchConversation(id);
      refreshIfChanged();
    }
  });
  window.addEventListener("focus", () => refreshIfChanged());
}

/** Whether the turn announced last was started by this page. */
let ownTurn = false;

/** The conversation a hidden tab stopped watching, to watch again once shown. */
let paused = null;

/** Watch conversation `id` (null: none) instead of the one watched so far. */
export function watchConversation(id) {
  if (document.visibilityState === "hidden") {
    paused = id;
    return;
  }
  if (watching?.id === id) {
    return;
  }
  watching?.controller.abort();
  watching = id ? { id, controller: new AbortController() } : null;
  if (watching) {
    run(watching);
  }
}

async function run(watch) {
  let delay = 1000;
  while (watching === watch) {
    try {
      const events = await api.watch(watch.id, watch.controller.signal);
      delay = 1000;
      for await (const { name } of events) {
        if (watching !== watch) {
          return;
        }
        if (name === "turn.started") {
          // A turn this page runs is re-read by the page itself when it ends (turn.js);
          // one from elsewhere is followed live, then checked against the store.
          ownTurn = isRunning();
          if (!ownTurn) {
            followRunning(watch.id).then(() => refreshIfChanged());
          }
        } else if (name === "turn.finished" && !ownTurn && !isRunning()) {
          await refreshIfChanged();
        }
      }
    } catch (error) {
      if (watching !== watch || error.name === "AbortError" || error.status === 404) {
        return;
      }
    }
    // The stream broke (the server restarted, the network dropped): try again, slower,
    // and re-read in case a turn ran meanwhile.
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 15000);
    if (watching === watch && !isRunning()) {
      await refreshIfChanged();
    }
  }
}

/** Re-read the open conversation when the stored one differs from what is shown. */
function refreshIfChanged() {
  return reread({ ifChanged: true });
}
