// Start-up and wiring: the token, onboarding or the app, the composer, the top bar and
// keyboard shortcuts. Opening conversations is in opening.js.

import { api, initToken } from "./api.js";
import { app, provideApp } from "./app.js";
import { acceptFiles, attachButton, fileTray } from "./attachments.js";
import { startEdit, startRegenerate, switchVersion } from "./branches.js";
import * as chat from "./chat.js";
import { openCompactDialog } from "./compact.js";
import { openConversationSettings } from "./conversation-settings.js";
import { promptDialog } from "./dialog.js";
import { byId, h } from "./dom.js";
import { initDrawer, isDrawerOpen, setDrawer } from "./drawer.js";
import { initEffortControl } from "./effort.js";
import { initFind } from "./find.js";
import { redoFold } from "./fold-redo.js";
import { initHandoff } from "./handoff.js";
import { initPromptMenu } from "./mcp-prompts.js";
import { openShortcutSheet, shortcutOf } from "./keyboard.js";
import { initMeter } from "./meter.js";
import { initModelPicker, openPicker, renderPickers } from "./model-picker.js";
import {
  initModelView,
  isModelViewOpen,
  refreshModelView,
  toggleModelView,
} from "./modelview.js";
import { notify, notifyError } from "./notices.js";
import { hideOnboarding, onboardingSettingsChanged, showOnboarding } from "./onboarding.js";
import {
  createConversation,
  openConversation,
  refreshContext,
  refreshConversation,
  refreshFolds,
  rereadConversation,
  showEmptyState,
  startApp,
} from "./opening.js";
import { initPins } from "./pins.js";
import { initRetiredNotice } from "./retired.js";
import { isConfigured, loadSettings, openSettings } from "./settings.js";
import { chooseProject, initProjects, showDraftIn } from "./projects.js";
import { deleteConversation, initSidebar, refreshList, renameConversation } from "./sidebar.js";
import { rovingList } from "./roving.js";
import { on, setBusy, state, update } from "./state.js";
import { applyTheme } from "./theme.js";
import { exportConversation, importFile } from "./transfer.js";
import { isRunning, retryLast, sendMessage, stop } from "./turn.js";
import { initWatch } from "./watch.js";

// ---- the header ---------------------------------------------------------------------

/** Set once start-up has finished; until then the app stays in its "loading" state. */
let ready = false;

function renderHeader() {
  const conversation = state.conversation;
  if (ready) {
    byId("app").dataset.state = conversation ? "open" : "empty";
  }
  byId("conversation-title").textContent = conversation?.title || "Foldline";
  renderPickers();
  document.title = conversation?.title ? `${conversation.title} · Foldline` : "Foldline";
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

// ---- composer ----------------------------------------------------------------------

function autosize(textarea) {
  textarea.style.height = "auto";
  textarea.style.height = `${Math.min(textarea.scrollHeight, window.innerHeight * 0.4)}px`;
}

/** The files waiting to be sent with the next message (set up in `initComposer`). */
let composerFiles = null;

function updateComposer() {
  const input = byId("composer-input", HTMLTextAreaElement);
  const busy = Boolean(state.busy);
  byId("send-button").hidden = busy;
  byId("stop-button").hidden = !busy;
  byId("send-button", HTMLButtonElement).disabled =
    input.value.trim() === "" && !composerFiles?.count();
  byId("compact-button", HTMLButtonElement).disabled = busy;
}

async function submitComposer() {
  const input = byId("composer-input", HTMLTextAreaElement);
  const content = input.value.trim();
  const files = composerFiles;
  if ((!content && !files?.count()) || isRunning() || state.busy || !ready) {
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
  const outgoing = { attachments: files?.attachments() ?? [], parts: files?.parts() ?? [] };
  const sent = await sendMessage(content, outgoing);
  if (sent) {
    // A refused message keeps its files in the tray, like its text, so nothing is lost.
    files?.clear();
  }
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
  const input = byId("composer-input", HTMLTextAreaElement);
  const form = byId("composer-form");
  composerFiles = fileTray({ onChange: updateComposer });
  composerFiles.element.id = "composer-files";
  form.before(composerFiles.element);
  form.prepend(attachButton(composerFiles, { id: "attach-button" }), composerFiles.input);
  // Files dropped anywhere in the window (not only on the message box) wait in the tray.
  acceptFiles(document.body, composerFiles);
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
  initPromptMenu(composerFiles);
  on("busy", updateComposer);
  updateComposer();
}

// ---- top bar ----------------------------------------------------------------------

function initTopbar() {
  byId("compact-button").addEventListener("click", () => app.compactNow());
  byId("settings-button").addEventListener("click", () => openSettings());
  const more = byId("more-button");
  const menu = byId("more-menu");
  const items = () =>
    [...menu.querySelectorAll("button[data-action]")]
      .map((item) => /** @type {HTMLButtonElement} */ (item))
      .filter((item) => item.offsetParent !== null);
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
    const at = list.indexOf(/** @type {HTMLButtonElement} */ (document.activeElement));
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
    const button = /** @type {HTMLElement|null} */ (
      /** @type {Element} */ (event.target).closest("button[data-action]")
    );
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
      case "move-to-project":
        chooseProject(conversation);
        break;
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
        app.compactNow();
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
  const importInput = byId("import-file", HTMLInputElement);
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

function initSkipLink() {
  // Focus without following the link: the page's address carries the token and the
  // conversation, which a "#composer-input" fragment would replace.
  byId("skip-to-composer").addEventListener("click", (event) => {
    event.preventDefault();
    byId("composer-input").focus();
  });
  byId("skip-to-conversation").addEventListener("click", (event) => {
    event.preventDefault();
    if (state.conversation) {
      conversationList?.focus();
    } else {
      byId("composer-input").focus();
    }
  });
  byId("shortcuts-button").addEventListener("click", () => openShortcutSheet());
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
    const action = shortcutOf(event);
    if (!action || (dialogOpen && action !== "help")) {
      return;
    }
    event.preventDefault();
    const open = Boolean(state.conversation);
    switch (action) {
      case "new":
        startDraft();
        break;
      case "search":
        if (window.matchMedia("(max-width: 720px)").matches && !isDrawerOpen()) {
          setDrawer(true);
        }
        byId("search").focus();
        break;
      case "settings":
        openSettings();
        break;
      case "model-picker":
        openPicker();
        break;
      case "model-view":
        if (open) {
          toggleModelView();
        }
        break;
      case "compact":
        if (open && !state.busy) {
          app.compactNow();
        }
        break;
      case "conversation":
        conversationList?.focus();
        break;
      case "help":
        if (!dialogOpen) {
          openShortcutSheet();
        }
        break;
      default:
        break;
    }
  });
}

/** The "↓ Latest" pill sits above the "Continued in" bar, never over its links. */
function keepLatestAboveLinks() {
  const links = document.getElementById("handoff-links");
  if (!links) {
    return;
  }
  const place = () =>
    byId("chat").style.setProperty("--below-chat", `${links.hidden ? 0 : links.offsetHeight}px`);
  new ResizeObserver(place).observe(links);
  new MutationObserver(place).observe(links, { attributes: true, attributeFilter: ["hidden"] });
}

/** The roving lists: the conversation's messages and the sidebar's rows. */
let conversationList = null;

function initLists() {
  conversationList = rovingList(byId("chat-inner"), {
    items: ".message, .fold-line",
    start: "last",
  });
  // A row opens on Enter by its own handler.
  rovingList(byId("conversation-list"), {
    items: ".conversation-item",
    onEnter: () => true,
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
      timeout: 20000,
      action: { label: "Redo", run: () => redoFold(id, fold.version, afterFoldChange) },
    });
  } catch (error) {
    notifyError("The fold could not be undone", error);
  }
  await afterFoldChange();
}

/** Redraw what a fold undone or brought back changes. */
async function afterFoldChange() {
  await refreshFolds();
  await Promise.all([refreshConversation(), refreshContext()]);
  chat.renderFolds();
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

async function main() {
  applyTheme();
  if (!initToken()) {
    showNoToken();
    return;
  }
  provideApp({
    open: (id, opening) => openConversation(id, opening),
    startDraft,
    startDraftIn: (project) => {
      startDraft();
      showDraftIn(project.id);
    },
    showEmptyState,
    conversationDeleted: (id) => {
      if (id === state.currentId) {
        showEmptyState();
      }
    },
    refreshList,
    refreshFolds,
    refreshContext,
    foldsChanged: () => refreshFolds().then(() => refreshConversation()),
    reread: (options) => rereadConversation(options),
    projectsChanged: async () => {
      await refreshList();
      if (state.currentId) {
        // What the open conversation sends may have changed with its project.
        await refreshContext();
        if (isModelViewOpen()) {
          refreshModelView();
        }
      }
    },
    compactNow: () => openCompactDialog({ afterRedo: afterFoldChange }),
    retry: () => retryLast(),
    undoFold,
    edit: startEdit,
    regenerate: startRegenerate,
    switchVersion,
  });
  initSidebar();
  initProjects();
  chat.initChat();
  initMeter();
  initRetiredNotice();
  initModelView();
  initPins();
  initHandoff();
  keepLatestAboveLinks();
  initWatch();
  initFind();
  initComposer();
  initTopbar();
  initDrawer();
  initLists();
  initSkipLink();
  initShortcuts();
  on("conversation", renderHeader);
  on("settings", renderHeader);
  initEffortControl();
  initModelPicker();
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
    // Configured from the Settings dialog instead of the onboarding buttons: a provider
    // without a model leads to choosing one; a default model (and a provider) ends it.
    if (onboarding && isConfigured(saved) && !document.querySelector("dialog[open]")) {
      finishOnboarding();
    } else if (onboarding) {
      onboardingSettingsChanged(saved);
    }
  });
  on("settings-closed", () => {
    if (onboarding && state.settings && isConfigured(state.settings)) {
      finishOnboarding();
    } else if (onboarding && state.settings) {
      onboardingSettingsChanged(state.settings);
    }
  });
}

let onboarding = false;

/** Onboarding ends on a new conversation with the model it set up. */
async function finishOnboarding() {
  onboarding = false;
  hideOnboarding();
  const draft = state.draftModel;
  startDraft();
  update({ draftModel: draft });
  renderPickers();
  byId("composer-input").focus();
}

main().catch((error) => {
  markReady();
  notifyError("Foldline could not start", error);
});
