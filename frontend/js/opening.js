// Opening conversations: one the person picks, the last one again at start-up (or the one
// the link names), the start screen, and re-reading what the views show of the open one.
// Opening also attaches to an answer still being written (after a reload, or sent from
// another window), so it is drawn live to its end.

import { ApiError, api } from "./api.js";
import * as chat from "./chat.js";
import { byId } from "./dom.js";
import { isDrawerOpen, setDrawer } from "./drawer.js";
import { updateContext } from "./meter.js";
import { isModelViewOpen, refreshModelView } from "./modelview.js";
import { notify, notifyError } from "./notices.js";
import { renderPins } from "./pins.js";
import { refreshList } from "./sidebar.js";
import { state, update } from "./state.js";
import { followRunning, isRunning, stopFollowing } from "./turn.js";
import { watchConversation } from "./watch.js";

const CURRENT_KEY = "foldline.currentConversation";

export async function refreshConversation() {
  const id = state.currentId;
  if (!id) {
    return;
  }
  try {
    const conversation = await api.getConversation(id);
    if (id === state.currentId) {
      update({ conversation });
      chat.renderFolds();
    }
  } catch (error) {
    notifyError("Could not load the conversation", error);
  }
}

export async function refreshFolds() {
  const id = state.currentId;
  if (!id) {
    return;
  }
  try {
    const items = await api.compactions(id);
    if (id !== state.currentId) {
      return;
    }
    const current = items.find((fold) => fold.isCurrent) ?? null;
    update({ compactions: items, compaction: current });
    chat.renderFolds();
  } catch (error) {
    notifyError("Could not load the folds", error);
  }
}

/** Conversations whose invalid-settings notice was shown (once per conversation and run). */
const settingsNoticesShown = new Set();

/**
 * @param {string} id
 * @param {{settingsNotice: string|null}} context
 */
function announceSettingsNotice(id, context) {
  if (context?.settingsNotice && !settingsNoticesShown.has(id)) {
    settingsNoticesShown.add(id);
    notify({
      kind: "warn",
      title: "Settings set aside",
      text: context.settingsNotice,
      timeout: 15000,
    });
  }
}

export async function refreshContext() {
  const id = state.currentId;
  if (!id) {
    return;
  }
  try {
    // Only the numbers: the meter never shows the messages (the model view asks for them).
    const context = await api.context(id, { messages: false });
    if (id === state.currentId) {
      updateContext(context);
      announceSettingsNotice(id, context);
    }
  } catch (error) {
    // With no model connected yet (a conversation imported before onboarding) nothing
    // can be counted, and the Welcome page in front already says what to do next.
    if (error instanceof ApiError && error.code === "no_model") {
      return;
    }
    notifyError("Could not count the context", error);
  }
}

function rememberCurrent(id) {
  if (id) {
    localStorage.setItem(CURRENT_KEY, id);
  } else {
    localStorage.removeItem(CURRENT_KEY);
  }
}

/**
 * Open a conversation at its newest message, or at message `at`: with search `terms`
 * marked, or `offset` pixels below the top of the view (see chat-paging.js). With
 * `branchOf` (a message on another branch, e.g. a search match) that branch is made the
 * one shown first.
 * @param {string} id
 * @param {import("./app.js").Opening} [opening]
 */
export async function openConversation(
  id,
  { quietIfMissing = false, at = null, terms = [], offset = null, branchOf = null } = {},
) {
  if (id !== state.currentId) {
    // Following another window's answer is only for showing it; this page did not start it.
    stopFollowing();
  }
  if (isRunning() && id !== state.currentId) {
    notify({
      kind: "info",
      title: "Still answering",
      text: "The answer keeps running and is saved; you will see it when you come back.",
    });
  }
  update({ currentId: id, context: null, compactions: [] });
  rememberCurrent(id);
  if (isDrawerOpen()) {
    setDrawer(false);
  }
  if (branchOf) {
    try {
      await api.setActiveLeaf(id, branchOf);
    } catch (error) {
      notifyError("Could not show the version with the match", error);
    }
  }
  // The newest page needs only the id, so it is asked for with the conversation, not
  // after it (a failure is reported once, by the conversation's own request or the page's).
  const newest = at === null ? chat.fetchNewest(id) : null;
  newest?.catch(() => {});
  let conversation;
  try {
    conversation = await api.getConversation(id);
  } catch (error) {
    if (!(quietIfMissing && error.status === 404)) {
      notifyError("Could not open the conversation", error);
    }
    if (error.status === 404) {
      watchConversation(null);
      rememberCurrent(null);
      chat.clearChat();
      update({ currentId: null, conversation: null, context: null });
    }
    return;
  }
  if (id !== state.currentId) {
    return;
  }
  watchConversation(id);
  update({ conversation, context: null });
  // Stored settings that could not be read back (served as none until saved again).
  announceSettingsNotice(id, { settingsNotice: conversation.notice });
  // The meter's numbers come with the messages: the server sums stored per-message
  // counts, so the count costs milliseconds at any length and never waits for the page.
  const counted = refreshContext();
  await Promise.all([
    refreshFolds(),
    chat.openConversation(conversation, { at, terms, offset, newest }),
  ]);
  chat.renderFolds();
  renderPins();
  // An answer still being written (this page was reloaded, or another window sent it):
  // follow it live rather than show a frozen part of it.
  if (!isRunning()) {
    followRunning(id);
  }
  await counted;
  if (isModelViewOpen()) {
    refreshModelView();
  }
  if (at === null) {
    byId("composer-input").focus();
  }
}

/**
 * Show what is stored now of the open conversation after a turn that ran elsewhere: its
 * new messages appended when only some were added, else the page drawn again. With
 * `ifChanged`, nothing is done while the stored history ends where the page's does.
 */
export async function rereadConversation({ ifChanged = false } = {}) {
  const id = state.currentId;
  if (!id || isRunning()) {
    return;
  }
  let stored;
  try {
    stored = await api.getConversation(id);
  } catch (error) {
    if (!ifChanged) {
      notifyError("Could not load the conversation", error);
    }
    return;
  }
  if (id !== state.currentId || isRunning()) {
    return;
  }
  const shownTotal = chat.totalMessages();
  const shownLast = chat.messageAt(shownTotal - 1);
  const same =
    stored.messageCount === shownTotal && (!shownLast || shownLast.id === stored.activeLeafId);
  if (ifChanged && same) {
    return;
  }
  update({ conversation: stored });
  // Added messages only: the ones the page had are still the stored ones if its last one
  // is still on the path. They are put in order, as a live turn would put them (at the
  // end, or counted while the reader is far up); anything else redraws the page.
  const appended = stored.messageCount > shownTotal && shownTotal > 0 && shownLast;
  const redraw = async () => {
    if (appended) {
      try {
        const page = await api.listMessages(id, {
          offset: shownTotal - 1,
          limit: stored.messageCount - shownTotal + 1,
        });
        if (page.messages[0]?.id === shownLast.id && id === state.currentId && !isRunning()) {
          page.messages.forEach((message) => chat.putMessage(message));
          return;
        }
      } catch {
        // Drawn again below.
      }
    }
    await chat.openConversation(stored, {});
  };
  await Promise.all([redraw(), refreshFolds(), refreshContext(), refreshList()]);
  chat.renderFolds();
  renderPins();
}

export async function createConversation() {
  try {
    const projectId = state.draftProjectId;
    const draft = state.draftModel;
    const conversation = await api.createConversation({
      ...(projectId ? { projectId } : {}),
      ...(draft?.model ? { model: draft.model, provider: draft.provider ?? undefined } : {}),
    });
    update({ draftProjectId: null, draftModel: null });
    await refreshList();
    await openConversation(conversation.id);
    return conversation;
  } catch (error) {
    notifyError("Could not start a conversation", error);
    return null;
  }
}

export function showEmptyState() {
  watchConversation(null);
  rememberCurrent(null);
  chat.clearChat();
  update({
    draftProjectId: null,
    currentId: null,
    conversation: null,
    context: null,
    compactions: [],
  });
}

/** Load the list and reopen the last conversation (or the one the link names), at once. */
export async function startApp() {
  const wanted =
    new URLSearchParams(window.location.hash.slice(1)).get("c") ||
    localStorage.getItem(CURRENT_KEY);
  if (wanted) {
    // A deleted conversation answers 404 and leaves the start screen, without a notice.
    await Promise.all([refreshList(), openConversation(wanted, { quietIfMissing: true })]);
  } else {
    await refreshList();
    showEmptyState();
  }
}
