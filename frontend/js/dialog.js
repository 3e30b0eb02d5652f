// Modal dialogs on the native <dialog> element (focus trap and Esc for free).

import { h, icon } from "./dom.js";

/**
 * Open a modal built from `head`, `body` and `foot` nodes. Returns the dialog; it removes
 * itself from the DOM when closed, and `onClose` runs once. With `mayClose` (an async
 * function answering true or false), Esc and the × button ask it first; the dialog's
 * `requestClose()` does the same for other Close buttons.
 * @param {{title: string, subtitle?: string, body?: Node, foot?: Node|null, wide?: boolean,
 *   onClose?: () => void, id?: string, mayClose?: (() => Promise<boolean>)|null}} parts
 */
export function openModal({
  title,
  subtitle = "",
  body,
  foot,
  wide = false,
  onClose,
  id,
  mayClose = null,
}) {
  const requestClose = async () => {
    if (!mayClose || (await mayClose())) {
      dialog.close();
    }
  };
  const dialog = h(
    "dialog",
    { class: ["modal", wide && "wide"], id, "aria-label": title },
    h(
      "div",
      { class: "modal-head" },
      h("div", {}, h("h2", { text: title }), subtitle ? h("p", { text: subtitle }) : null),
      h(
        "button",
        {
          type: "button",
          class: "icon-button",
          "aria-label": "Close",
          on: { click: requestClose },
        },
        icon("x"),
      ),
    ),
    body,
    foot,
  );
  dialog.addEventListener("close", () => {
    onClose?.();
    dialog.remove();
  });
  dialog.requestClose = requestClose;
  if (mayClose) {
    dialog.addEventListener("cancel", (event) => {
      // Esc on this dialog itself (not on one opened above it).
      event.preventDefault();
      requestClose();
    });
  }
  document.body.appendChild(dialog);
  dialog.showModal();
  return dialog;
}

/** Ask a yes/no question; resolves true when confirmed. */
export function confirmDialog({ title, text, confirmLabel = "OK", danger = false }) {
  return new Promise((resolve) => {
    let answer = false;
    const confirm = h("button", {
      type: "button",
      class: ["button", danger ? "danger" : "primary"],
      text: confirmLabel,
      dataset: { role: "confirm" },
      on: {
        click: () => {
          answer = true;
          dialog.close();
        },
      },
    });
    const dialog = openModal({
      title,
      body: h("div", { class: "modal-body" }, h("p", { text })),
      foot: h(
        "div",
        { class: "modal-foot" },
        h("button", {
          type: "button",
          class: "button",
          text: "Cancel",
          on: { click: () => dialog.close() },
        }),
        confirm,
      ),
      onClose: () => resolve(answer),
    });
    confirm.focus();
  });
}

/** Ask for one line of text; resolves the trimmed text, or null when cancelled. */
export function promptDialog({ title, label, value = "", confirmLabel = "Save" }) {
  return new Promise((resolve) => {
    let answer = null;
    const input = h("input", { class: "input", type: "text", ".value": value });
    const form = h(
      "form",
      {
        class: "modal-body",
        on: {
          submit: (event) => {
            event.preventDefault();
            answer = input.value.trim();
            dialog.close();
          },
        },
      },
      h("label", { class: "field" }, h("span", { class: "field-label", text: label }), input),
    );
    const dialog = openModal({
      title,
      body: form,
      foot: h(
        "div",
        { class: "modal-foot" },
        h("button", {
          type: "button",
          class: "button",
          text: "Cancel",
          on: { click: () => dialog.close() },
        }),
        h("button", {
          type: "button",
          class: "button primary",
          text: confirmLabel,
          on: { click: () => form.requestSubmit() },
        }),
      ),
      onClose: () => resolve(answer),
    });
    input.focus();
    input.select();
  });
}
