// The controls of a message's versions, as DOM only: the `‹ 2 / 3 ›` switcher under a
// message that has siblings, Edit on the person's messages, Regenerate on answers, and
// the inline editor an edit opens. What the buttons do is passed in (branches.js), so
// drawing a message never depends on the code that runs turns.

import { acceptFiles, attachButton, fileTray } from "./attachments.js";
import { h, icon } from "./dom.js";

/**
 * The ids of a message and its siblings (oldest first); one id when it has none.
 * @param {MessageOut} message
 */
export function versionsOf(message) {
  const ids = Array.isArray(message?.siblingIds) ? message.siblingIds : [];
  return ids.length ? ids : [message?.id ?? ""];
}

/**
 * The sibling `step` versions away (-1 the previous, +1 the next), or null at the ends.
 * @param {MessageOut} message
 */
export function siblingAt(message, step) {
  const ids = versionsOf(message);
  const at = ids.indexOf(message.id);
  const target = at < 0 ? null : ids[at + step];
  return target ?? null;
}

/**
 * `‹ k / n ›` under a message with siblings; the arrows are real buttons.
 * @param {MessageOut} message
 */
export function versionSwitcher(message, onSwitch) {
  const ids = versionsOf(message);
  if (ids.length < 2 || !onSwitch) {
    return null;
  }
  const position = ids.indexOf(message.id) + 1;
  const arrow = (step, label, name) =>
    h(
      "button",
      {
        type: "button",
        class: ["icon-button", "version-step", step < 0 ? "previous" : "next"],
        "aria-label": label,
        title: `${label} (Alt+${step < 0 ? "←" : "→"})`,
        disabled: siblingAt(message, step) === null,
        on: { click: () => onSwitch(message, step) },
      },
      icon(name, "small"),
    );
  return h(
    "span",
    {
      class: "version-switcher",
      role: "group",
      "aria-label": `Version ${position} of ${ids.length}`,
    },
    arrow(-1, "Previous version", "chevron-left"),
    h("span", { class: "version-position", text: `${position} / ${ids.length}` }),
    arrow(1, "Next version", "chevron-right"),
  );
}

/**
 * Edit (the person's messages) or Regenerate (answers), when the action is wired.
 * @param {MessageOut} message
 */
export function branchButton(message, { onEdit, onRegenerate }) {
  if (!message.id) {
    return null;
  }
  if (message.role === "user" && onEdit) {
    return h(
      "button",
      {
        type: "button",
        class: "icon-button edit-button",
        title: "Edit and send again (the original stays as a version)",
        "aria-label": "Edit message",
        on: { click: (event) => onEdit(message, event.currentTarget.closest(".message")) },
      },
      icon("pencil", "small"),
    );
  }
  if (message.role === "assistant" && onRegenerate) {
    return h(
      "button",
      {
        type: "button",
        class: "icon-button regenerate-button",
        title: "Regenerate (this answer stays as a version)",
        "aria-label": "Regenerate answer",
        on: { click: () => onRegenerate(message) },
      },
      icon("refresh-cw", "small"),
    );
  }
  return null;
}

/**
 * The inline editor of a person's message: the text to send instead, Enter to send,
 * Shift+Enter for a new line, Esc to cancel. `warning(text)` shows a note above the
 * buttons (the model's view changes); `busy(true)` while the edit is being sent.
 */
export function messageEditor(text, { onSend, onCancel, files = [] }) {
  const input = h("textarea", {
    class: "textarea edit-input",
    rows: "3",
    "aria-label": "Edited message",
  });
  input.value = text;
  // The message's files stay unless removed; more can be attached, pasted or dropped.
  const tray = fileTray({ kept: files, onChange: () => updateSend() });
  const note = h("p", { class: "edit-warning", role: "status", hidden: true });
  const send = h("button", { type: "button", class: "button primary edit-send", text: "Send" });
  const cancel = h("button", { type: "button", class: "button edit-cancel", text: "Cancel" });
  const form = h(
    "div",
    { class: "message-editor" },
    input,
    tray.element,
    tray.input,
    note,
    h(
      "div",
      { class: "edit-actions" },
      attachButton(tray),
      h("span", { class: "edit-hint", text: "Enter sends · Shift+Enter new line · Esc cancels" }),
      cancel,
      send,
    ),
  );
  acceptFiles(form, tray);
  const empty = () => input.value.trim() === "" && tray.count() === 0;
  const updateSend = () => {
    send.disabled = input.readOnly || empty();
  };
  const submit = () => {
    const value = input.value.trim();
    if (!empty() && !send.disabled) {
      onSend(value, { attachments: tray.attachments(), keep: tray.keep(), parts: tray.parts() });
    }
  };
  const autosize = () => {
    input.style.height = "auto";
    input.style.height = `${Math.min(input.scrollHeight, window.innerHeight * 0.5)}px`;
  };
  input.addEventListener("input", () => {
    updateSend();
    autosize();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    } else if (event.key === "Escape") {
      // Esc belongs to the editor here: it must not also stop a turn or close a panel.
      event.preventDefault();
      event.stopPropagation();
      onCancel();
    }
  });
  send.addEventListener("click", submit);
  cancel.addEventListener("click", () => onCancel());
  return {
    element: form,
    focus() {
      autosize();
      input.focus();
      input.setSelectionRange(input.value.length, input.value.length);
    },
    warning(message) {
      note.hidden = !message;
      note.replaceChildren(...(message ? [icon("triangle-alert", "small"), message] : []));
    },
    busy(on) {
      input.readOnly = on;
      updateSend();
    },
  };
}
