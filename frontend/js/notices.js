// Visible notices: every error ends up here (or inline where the person is looking).

import { byId, h, icon } from "./dom.js";

export const DISK_FULL_TITLE = "The disk is full";

const ICONS = { error: "circle-alert", warn: "triangle-alert", success: "check", info: "info" };

/**
 * Show a notice. `kind` is error|warn|success|info; errors stay until dismissed
 * (they may need reading), the others fade after `timeout` ms.
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
