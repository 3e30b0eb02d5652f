// Keyboard shortcuts and the `?` sheet that lists them. Every main action has one, so a
// person on the keyboard reaches it in one or two presses whatever the conversation's
// length; the sheet is the list people look for (`?` outside a text field, or Ctrl+/).

import { openModal } from "./dialog.js";
import { h } from "./dom.js";

const MOD = /Mac|iPhone|iPad/.test(navigator.platform) ? "⌘" : "Ctrl";

/** [keys, what they do], in the order the sheet lists them. */
export const SHORTCUTS = [
  [`${MOD}+Shift+O`, "New conversation"],
  [`${MOD}+Shift+P`, "Choose the model"],
  [`${MOD}+Shift+M`, "Model view (what the model sees)"],
  [`${MOD}+Shift+L`, "Compact (fold older messages now)"],
  [`${MOD}+,`, "Settings"],
  [`${MOD}+K`, "Search conversations"],
  [`${MOD}+F`, "Find in this conversation"],
  [`${MOD}+Shift+E`, "Go to the conversation (its newest message)"],
  ["Esc", "Close a menu, the drawer or Model view; else stop the answer"],
  ["↑ / ↓, Home / End", "In the conversation or the sidebar: the previous / next entry"],
  ["→ / ←, Enter", "Into an entry's buttons and between them; Esc back to the entry"],
  ["Alt+← / Alt+→", "In a message with versions: the previous / next version"],
  ["Enter / Shift+Enter", "Send / a new line"],
  ["? or Ctrl+/", "This list"],
];

/**
 * Which action a key press asks for, or null. Kept apart from the DOM so the same table
 * serves the handler and the sheet.
 * @param {KeyboardEvent} event
 */
export function shortcutOf(event) {
  const mod = event.ctrlKey || event.metaKey;
  const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
  if (mod && event.shiftKey && !event.altKey) {
    return { o: "new", p: "model-picker", m: "model-view", l: "compact", e: "conversation" }[key] ?? null;
  }
  if (mod && !event.shiftKey && !event.altKey) {
    return { ",": "settings", k: "search", "/": "help" }[key] ?? null;
  }
  if (!mod && !event.altKey && event.key === "?" && !inTextField(event.target)) {
    return "help";
  }
  return null;
}

function inTextField(target) {
  return Boolean(target?.closest?.("input, textarea, select, [contenteditable]"));
}

let sheet = null;

export function openShortcutSheet() {
  if (sheet) {
    return;
  }
  sheet = openModal({
    title: "Keyboard shortcuts",
    id: "shortcut-sheet",
    onClose: () => {
      sheet = null;
    },
    body: h(
      "div",
      { class: "modal-body" },
      h(
        "table",
        { class: "shortcut-table" },
        h("thead", {}, h("tr", {}, h("th", { text: "Keys" }), h("th", { text: "Does" }))),
        h(
          "tbody",
          {},
          SHORTCUTS.map(([keys, does]) =>
            h("tr", {}, h("td", {}, h("kbd", { text: keys })), h("td", { text: does })),
          ),
        ),
      ),
    ),
  });
}
