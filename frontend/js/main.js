// Start-up and wiring: the token, onboarding or the app, the composer, the top bar,
// keyboard shortcuts, and opening conversations.

import { api, initToken } from "./api.js";
import * as chat from "./chat.js";
import { openCompactDialog } from "./compact.js";
import { openConversationSettings } from "./conversation-settings.js";
import { promptDialog } from "./dialog.js";
import { byId, h } from "./dom.js";
import { initMeter, updateContext } from "./meter.js";
import {
  initModelView,
  isModelViewOpen,
  refreshModelView,
  toggleModelView,
} from "./modelview.js";
import { notify, notifyError } from "./notices.js";
import { hideOnboarding, showOnboarding } from "./onboarding.js";
import { initPins, renderPins } from "./pins.js";
import { initRetiredNotice } from "./retired.js";
import { isConfigured, loadSettings, openSettings } from "./settings.js";
import { deleteConversation, initSidebar, refreshList, renameConversation } from "./sidebar.js";
import { emit, on, setBusy, state } from "./state.js";
import { exportConversation, importFile } from "./transfer.js";
import {
  followRunning,
  initTurns,
  isRunning,
  retryLast,
  sendMessage,
  stop,
  stopFollowing,
} from "./turn.js";

const CURRENT_KEY = "foldline.currentConversation";

// ---- loading what the views show ------------------------------------------------------

async function refreshConversation() {
  const id = state.currentId;
  if (!id) {
    return;
  }
  try {
    const conversation = await api.getConversation(id);
    if (id === state.currentId) {
      state.conversation = conversation;
      emit("conversation", conversation);
      chat.renderFolds();
    }
  } catch (error) {
    notifyError("Could not load the conversation", error);
  }
}

async function refreshFolds() {
  const id = state.currentId;
  if (!id) {
    return;
  }
  try {
    const items = await api.compactions(id);
    if (id !== state.currentId) {
      return;
    }
    state.compactions = items;
    const current = items.find((fold) => fold.isCurrent) ?? null;
    if (state.conversation) {
      state.conversation = { ...state.conversation, compaction: current };
    }
    chat.renderFolds();
    emit("compactions", items);
  } catch (error) {
    notifyError("Could not load the folds", error);
  }
}

/** Conversations whose invalid-settings notice was shown (once per conversation and run). */
const settingsNoticesShown = new Set();

/** @param {ContextOut} context */
function announceSettingsNotice(id, context) {
  if (context?.settingsNotice && !settingsNoticesShown.has(id)) {
    settingsNoticesShown.add(id);
    notify({ kind: "warn", title: "Settings set aside", text: context.settingsNotice, timeout: 15000 });
  }
}

async function refreshContext() {
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
    notifyError("Could not count the context", error);
  }
}

/** Set once start-up has finished; until then the app stays in its "loading" state. */
let ready = false;

function renderHeader() {
  const conversation = state.conversation;
  if (ready) {
    byId("app").dataset.state = conversation ? "open" : "empty";
  }
  byId("conversation-title").textContent = conversation?.title || "Foldline";
  byId("model-label").textContent = conversation
    ? (conversation.model ?? state.settings?.defaults?.model ?? "")
    : "";
  document.title = conversation?.title ? `${conversation.title} · Foldline` : "Foldline";
}

function rememberCurrent(id) {
  if (id) {
    localStorage.setItem(CURRENT_KEY, id);
  } else {
    localStorage.removeItem(CURRENT_KEY);
  }
}

/** Open a conversation at its newest message, or at message `at` with `terms` marked. */
export async function openConversation(id, { quietIfMissing = false, at = null, terms = [] } = {}) {
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
  state.currentId = id;
  state.context = null;
  state.compactions = [];
  rememberCurrent(id);
  if (isDrawerOpen()) {
    setDrawer(false);
  }
  let conversation;
  try {
    conversation = await api.getConversation(id);
  } catch (error) {
    if (!(quietIfMissing && error.status === 404)) {
      notifyError("Could not open the conversation", error);
    }
    if (error.status === 404) {
      state.currentId = null;
      state.conversation = null;
      rememberCurrent(null);
      chat.clearChat();
      emit("conversation", null);
      emit("context", null);
    }
    return;
  }
  if (id !== state.currentId) {
    return;
  }
  state.conversation = conversation;
  emit("conversation", conversation);
  emit("context", null);
  // The messages first: counting the model's view (GET /context) is the slowest request
  // on a long conversation, so it starts once the newest page is on screen.
  await Promise.all([refreshFolds(), chat.openConversation(conversation, { at, terms })]);
  chat.renderFolds();
  renderPins();
  // An answer still being written (this page was reloaded, or another window sent it):
  // follow it live rather than show a frozen part of it.
  if (!isRunning()) {
    followRunning(id);
  }
  await refreshContext();
  if (isModelViewOpen()) {
    refreshModelView();
  }
  if (at === null) {
    byId("composer-input").focus();
  }
}

/**
 * "+": a fresh, empty composer. Nothing is saved until the first message is sent (then
 * `submitComposer` creates the conversation), so the list never fills with empty ones.
 */
function startDraft() {
  if (isDrawerOpen()) {
    setDrawer(false);
  }
  showEmptyState();
  byId("composer-input").focus();
}

async function createConversation() {
  try {
    const conversation = await api.createConversation({});
    await refreshList();
    await openConversation(conversation.id);
    return conversation;
  } catch (error) {
    notifyError("Could not start a conversation", error);
    return null;
  }
}

function showEmptyState() {
  state.currentId = null;
  state.conversation = null;
  state.context = null;
  state.compactions = [];
  rememberCurrent(null);
  chat.clearChat();
  emit("conversation", null);
  emit("context", null);
}

// ---- composer ----------------------------------------------------------------------

function autosize(textarea) {
  textarea.style.height = "auto";
  textarea.style.height = `${Math.min(textarea.scrollHeight, window.innerHeight * 0.4)}px`;
}

function updateComposer() {
  const input = byId("composer-input");
  const busy = Boolean(state.busy);
  byId("send-button").hidden = busy;
  byId("stop-button").hidden = !busy;
  byId("send-button").disabled = input.value.trim() === "";
  byId("compact-button").disabled = busy;
}

async function submitComposer() {
  const input = byId("composer-input");
  const content = input.value.trim();
  if (!content || isRunning() || state.busy || !ready) {
    return;
  }
  if (!state.currentId) {
    // The first message of a new conversation creates it; until the turn starts the app
    // is busy, so a second Enter cannot create a second conversation.
    setBusy("turn");
    const conversation = await createConversation();
    if (!conversation) {
      setBusy(null);
      return;
    }
  }
  input.value = "";
  autosize(input);
  updateComposer();
  const sent = await sendMessage(content);
  if (!sent && !isRunning()) {
    setBusy(null);
  }
  if (!sent && !input.value) {
    // The server refused the message: give the text back so nothing is lost.
    input.value = content;
    autosize(input);
    updateComposer();
  }
}

function initComposer() {
  const input = byId("composer-input");
  const form = byId("composer-form");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submitComposer();
  });
  input.addEventListener("input", () => {
    autosize(input);
    updateComposer();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submitComposer();
    }
  });
  byId("stop-button").addEventListener("click", () => stop());
  on("busy", updateComposer);
  updateComposer();
}

// ---- top bar ----------------------------------------------------------------------

function initTopbar() {
  byId("compact-button").addEventListener("click", () => openCompactDialog());
  byId("settings-button").addEventListener("click", () => openSettings());
  const more = byId("more-button");
  const menu = byId("more-menu");
  const items = () => [...menu.querySelectorAll("button[data-action]")].filter(
    (item) => item.offsetParent !== null,
  );
  const closeMenu = ({ refocus = false } = {}) => {
    if (menu.hidden) {
      return;
    }
    menu.hidden = true;
    more.setAttribute("aria-expanded", "false");
    if (refocus) {
      more.focus();
    }
  };
  const openMenu = (focusLast = false) => {
    menu.hidden = false;
    more.setAttribute("aria-expanded", "true");
    const list = items();
    (focusLast ? list.at(-1) : list[0])?.focus();
  };
  more.setAttribute("aria-expanded", "false");
  more.addEventListener("click", (event) => {
    event.stopPropagation();
    if (menu.hidden) {
      openMenu();
    } else {
      closeMenu();
    }
  });
  more.addEventListener("keydown", (event) => {
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      openMenu(event.key === "ArrowUp");
    }
  });
  // The WAI-ARIA menu keys: arrows move, Home/End jump, Escape closes back to the button,
  // Tab leaves the menu.
  menu.addEventListener("keydown", (event) => {
    const list = items();
    const at = list.indexOf(document.activeElement);
    const moves = {
      ArrowDown: (at + 1) % list.length,
      ArrowUp: (at - 1 + list.length) % list.length,
      Home: 0,
      End: list.length - 1,
    };
    if (event.key in moves) {
      event.preventDefault();
      list[moves[event.key]]?.focus();
    } else if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      closeMenu({ refocus: true });
    } else if (event.key === "Tab") {
      closeMenu();
    }
  });
  document.addEventListener("click", () => closeMenu());
  menu.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button || !state.conversation) {
      return;
    }
    closeMenu();
    const conversation = state.conversation;
    switch (button.dataset.action) {
      case "rename": {
        const title = await promptDialog({
          title: "Rename conversation",
          label: "Title",
          value: conversation.title,
        });
        if (title) {
          await renameConversation(conversation.id, title);
        }
        break;
      }
      case "export-markdown":
        await exportConversation(conversation.id, "markdown");
        break;
      case "export-json":
        await exportConversation(conversation.id, "json");
        break;
      case "delete":
        await deleteConversation(conversation);
        break;
      case "compact":
        openCompactDialog();
        break;
      case "conversation-settings":
        openConversationSettings({ afterSave: refreshContext });
        break;
      case "model-view":
        toggleModelView();
        break;
      default:
        break;
    }
  });
  byId("conversation-title").addEventListener("dblclick", async () => {
    if (!state.conversation) {
      return;
    }
    const title = await promptDialog({
      title: "Rename conversation",
      label: "Title",
      value: state.conversation.title,
    });
    if (title) {
      await renameConversation(state.conversation.id, title);
    }
  });
  const importInput = byId("import-file");
  byId("import-button").addEventListener("click", () => importInput.click());
  importInput.addEventListener("change", async () => {
    const file = importInput.files?.[0];
    importInput.value = "";
    if (!file) {
      return;
    }
    const conversation = await importFile(file);
    if (conversation) {
      await refreshList();
      await openConversation(conversation.id);
    }
  });
}

// ---- the sidebar as a drawer (narrow windows) ----------------------------------------

function setDrawer(open) {
  byId("app").classList.toggle("sidebar-open", open);
  byId("drawer-backdrop").hidden = !open;
  byId("sidebar-button").setAttribute("aria-expanded", String(open));
  if (open) {
    byId("search").focus();
  }
}

function isDrawerOpen() {
  return byId("app").classList.contains("sidebar-open");
}

function initSkipLink() {
  // Focus without following the link: the page's address carries the token and the
  // conversation, which a "#composer-input" fragment would replace.
  document.querySelector(".skip-link").addEventListener("click", (event) => {
    event.preventDefault();
    byId("composer-input").focus();
  });
}

function initDrawer() {
  byId("sidebar-button").addEventListener("click", () => setDrawer(!isDrawerOpen()));
  byId("drawer-backdrop").addEventListener("click", () => setDrawer(false));
}

function initShortcuts() {
  document.addEventListener("keydown", (event) => {
    const dialogOpen = document.querySelector("dialog[open]");
    if (event.key === "Escape" && !dialogOpen && isDrawerOpen()) {
      event.preventDefault();
      setDrawer(false);
      byId("sidebar-button").focus();
      return;
    }
    if (event.key === "Escape" && !dialogOpen && isModelViewOpen()) {
      event.preventDefault();
      toggleModelView(false);
      byId("model-view-button").focus();
      return;
    }
    if (event.key === "Escape" && !dialogOpen && isRunning()) {
      event.preventDefault();
      stop();
      return;
    }
    const mod = event.ctrlKey || event.metaKey;
    if (mod && event.shiftKey && (event.key === "O" || event.key === "o")) {
      event.preventDefault();
      startDraft();
    } else if (mod && (event.key === "k" || event.key === "K") && !event.shiftKey) {
      event.preventDefault();
      byId("search").focus();
    }
  });
}

// ---- undo -------------------------------------------------------------------------

/** @param {CompactionVersionOut} fold */
async function undoFold(fold) {
  const id = state.currentId;
  try {
    const result = await api.undoCompaction(id, fold.version);
    const previous = result?.compaction ?? null;
    notify({
      kind: "success",
      title: `Fold v${fold.version} undone`,
      text: previous
        ? `Version ${previous.version} is current again; nothing was deleted.`
        : "The model sees the whole history again; nothing was deleted.",
    });
  } catch (error) {
    notifyError("The fold could not be undone", error);
  }
  await refreshFolds();
  await Promise.all([refreshConversation(), refreshContext()]);
  chat.renderFolds();
  emit("compactions", state.compactions);
}

// ---- start ------------------------------------------------------------------------

function showNoToken() {
  markReady();
  const onboarding = byId("onboarding");
  onboarding.replaceChildren(
    h(
      "div",
      { class: "onboarding-inner" },
      h("div", { class: "mark" }),
      h("h2", { text: "Open Foldline from its own link" }),
      h("p", {
        text: "This page needs the access token that `foldline serve` prints (the address ending in #token=…), or the desktop window.",
      }),
    ),
  );
  onboarding.hidden = false;
}

function markReady() {
  ready = true;
  renderHeader();
}

/** Load the list and reopen the last conversation (or the one the link names), at once. */
async function startApp() {
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

async function main() {
  if (!initToken()) {
    showNoToken();
    return;
  }
  initSidebar({
    open: (id, opening) => openConversation(id, opening),
    create: () => startDraft(),
    afterDelete: async (id) => {
      if (id === state.currentId) {
        showEmptyState();
      }
    },
  });
  chat.initChat({
    onRetry: () => retryLast(),
    onUndo: (fold) => undoFold(fold),
  });
  initMeter({
    compactNow: () => openCompactDialog(),
    refresh: refreshContext,
    foldsChanged: () => refreshFolds().then(() => refreshConversation()),
  });
  initRetiredNotice();
  initModelView();
  initPins();
  initTurns({ refreshConversation, refreshFolds, refreshContext, refreshList });
  initComposer();
  initTopbar();
  initDrawer();
  initSkipLink();
  initShortcuts();
  on("conversation", renderHeader);
  on("settings", renderHeader);
  renderHeader();

  // Settings, the list and the last conversation load together; onboarding covers the
  // chat if nothing is configured yet.
  const settingsLoading = loadSettings().catch((error) => {
    notifyError("Could not load the settings", error);
    return null;
  });
  const [settings] = await Promise.all([settingsLoading, startApp()]);
  if (settings && !isConfigured(settings)) {
    onboarding = true;
    showOnboarding({ done: finishOnboarding, openSettings: (tab) => openSettings(tab) });
  }
  markReady();
  on("settings", (saved) => {
    // Configured from the Settings dialog instead of the onboarding buttons.
    if (onboarding && isConfigured(saved)) {
      finishOnboarding();
    }
  });
}

let onboarding = false;

async function finishOnboarding() {
  onboarding = false;
  hideOnboarding();
  byId("composer-input").focus();
}

main().catch((error) => {
  markReady();
  notifyError("Foldline could not start", error);
});
