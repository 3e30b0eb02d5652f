// Visible notices: every error ends up here (or inline where the person is looking).

import { byId, h, icon } from "./dom.js";

export const DISK_FULL_TITLE = "The disk is full";

const ICONS = { error: "circle-alert", warn: "triangle-alert", success: "check", info: "info" };

/** The topmost open modal dialog, or null (engines without `:modal` answer null). */
function topModal() {
  const open = [...document.querySelectorAll("dialog[open]")];
  try {
    return open.filter((dialog) => dialog.matches(":modal")).at(-1) ?? null;
  } catch {
    return null;
  }
}

/**
 * Keep the notices readable and dismissable: a modal dialog sits in the top layer and
 * makes the rest of the page inert, so while one is open the notices live inside it,
 * and showing them again as a popover puts them above it (browsers without popovers
 * keep them in the page as before).
 */
function placeNotices(container) {
  const host = topModal() ?? document.body;
  if (container.parentElement !== host) {
    host.appendChild(container);
  }
  if (typeof container.showPopover === "function") {
    if (container.matches(":popover-open")) {
      container.hidePopover();
    }
    container.showPopover();
  }
}

// A closing dialog gives its notices back to the page (dialogs are removed once closed);
// a capturing listener runs before the dialog's own.
document.addEventListener(
  "close",
  (event) => {
    const container = byId("notices");
    if (event.target instanceof HTMLDialogElement && event.target.contains(container)) {
      placeNotices(container);
    }
  },
  true,
);

/**
 * Show a notice. `kind` is error|warn|success|info; errors stay until dismissed
 * (they may need reading), the others fade after `timeout` ms.
 * @param {{kind?: "error"|"warn"|"success"|"info", title?: string, text?: string,
 *   timeout?: number, action?: {label: string, run: () => void}}} [notice]
 */
export function notify({ kind = "info", title = "", text = "", timeout, action } = {}) {
  const container = byId("notices");
  const close = () => notice.remove();
  const notice = h(
    "div",
    { class: ["notice", kind], role: kind === "error" ? "alert" : "status", dataset: { kind } },
    icon(ICONS[kind] ?? "info"),
    h(
      "div",
      { class: "notice-body" },
      title ? h("div", { class: "notice-title", text: title }) : null,
      text ? h("div", { class: "notice-text", text }) : null,
      action
        ? h("button", {
            type: "button",
            class: "link-button",
            text: action.label,
            on: {
              click: () => {
                close();
                action.run();
              },
            },
          })
        : null,
    ),
    h(
      "button",
      { type: "button", class: "icon-button", "aria-label": "Dismiss", on: { click: close } },
      icon("x", "small"),
    ),
  );
  container.appendChild(notice);
  placeNotices(container);
  const lifetime = timeout ?? (kind === "error" ? 0 : 5000);
  if (lifetime > 0) {
    setTimeout(close, lifetime);
  }
  // Keep the stack short: the oldest notices go first.
  while (container.children.length > 4) {
    container.firstElementChild.remove();
  }
  return close;
}

/** Show an error from any source with a title saying what was being done. */
export function notifyError(title, error) {
  if (error?.name === "AbortError") {
    return;
  }
  const text = error?.message || String(error ?? "Unknown error");
  // A full disk is the same problem whatever was being done: say it plainly.
  notify({ kind: "error", title: error?.code === "disk_full" ? DISK_FULL_TITLE : title, text });
}
