// Pins: messages the person keeps in the model's view word for word, whatever is folded.
//
// The conversation object lists its pins (`conversation.pins`); every message shows a pin
// button, and a bar above the chat lists what is pinned, with a way to jump to each
// message and to unpin it. Pins are sent after the summary in every request; their total
// is capped, and a refused pin is explained in a notice.

import { api } from "./api.js";
import { app } from "./app.js";
import { byId, h, icon } from "./dom.js";
import { notify } from "./notices.js";
import { on, state, update } from "./state.js";

function pins() {
  return state.conversation?.pins ?? [];
}

function isPinned(messageId) {
  return pins().some((pin) => pin.messageId === messageId);
}

function syncButton(button) {
  const pinned = isPinned(button.dataset.messageId);
  button.classList.toggle("pinned", pinned);
  button.setAttribute("aria-pressed", String(pinned));
  const label = pinned ? "Unpin message" : "Pin message (always sent to the model verbatim)";
  button.title = label;
  button.setAttribute("aria-label", label);
}

async function toggle(messageId) {
  const id = state.currentId;
  if (!id || !messageId) {
    return;
  }
  try {
    const result = isPinned(messageId)
      ? await api.unpinMessage(id, messageId)
      : await api.pinMessage(id, messageId);
    if (id !== state.currentId || !state.conversation) {
      return;
    }
    update({ pins: result.pins });
  } catch (error) {
    notify({
      kind: error.status === 422 ? "warn" : "error",
      title: error.status === 422 ? "Pin refused" : "Could not change the pin",
      text: error.message,
    });
  }
}

/**
 * The pin button of one message (messages without a stored id cannot be pinned yet).
 * @param {MessageOut} message
 */
export function pinButton(message) {
  if (!message.id) {
    return null;
  }
  const button = h(
    "button",
    {
      type: "button",
      class: "icon-button pin-button",
      dataset: { messageId: message.id },
      on: { click: () => toggle(message.id) },
    },
    icon("pin", "small"),
  );
  syncButton(button);
  return button;
}

function excerpt(text) {
  const flat = (text ?? "").replace(/\s+/g, " ").trim();
  return flat.length > 90 ? `${flat.slice(0, 89)}…` : flat;
}

function messageElement(index) {
  return document.querySelector(`.chat-inner .message[data-index="${index}"]`);
}

/** Show a pinned message: on the loaded page, or by loading its page. */
async function jumpTo(index) {
  const element = messageElement(index);
  if (!element) {
    await app.open(state.currentId, { at: index });
    return;
  }
  element.classList.add("search-hit");
  element.scrollIntoView({ block: "center" });
}

/** Whether a phone shows the pinned messages (it shows only their count until asked). */
let pinsShown = false;

/** Redraw the pinned bar and every pin button on screen. */
export function renderPins() {
  for (const button of document.querySelectorAll(".pin-button")) {
    syncButton(button);
  }
  const messages = document.querySelectorAll(".chat-inner .message");
  for (const element of /** @type {NodeListOf<HTMLElement>} */ (messages)) {
    element.classList.toggle("is-pinned", isPinned(element.dataset.id));
  }
  const bar = byId("pinned-list");
  const list = pins();
  bar.hidden = list.length === 0;
  if (!list.length) {
    bar.replaceChildren();
    return;
  }
  bar.classList.toggle("expanded", pinsShown);
  bar.replaceChildren(
    h(
      "div",
      { class: "pinned-head" },
      icon("pin", "small"),
      h("span", { text: `Pinned by you (${list.length})` }),
      h("span", { class: "pinned-hint", text: "always sent to the model, word for word" }),
      // On a phone the list folds away behind this (handoff.css).
      h("button", {
        type: "button",
        class: "link-button pinned-toggle",
        "aria-expanded": String(pinsShown),
        text: pinsShown ? "Hide" : "Show",
        on: {
          click: () => {
            pinsShown = !pinsShown;
            renderPins();
          },
        },
      }),
    ),
    h(
      "ul",
      { class: "pinned-items" },
      list.map((pin) => {
        // The server's excerpt names pins outside the loaded page too.
        const element = messageElement(pin.index);
        const text = pin.excerpt || element?.querySelector(".bubble, .md")?.textContent || "";
        return h(
          "li",
          { class: "pinned-item", dataset: { index: pin.index, messageId: pin.messageId } },
          h("button", {
            type: "button",
            class: "link-button pinned-jump",
            text: `#${pin.index} ${pin.role}${text ? `: ${excerpt(text)}` : ""}`,
            title: "Show this message",
            on: { click: () => jumpTo(pin.index) },
          }),
          h(
            "button",
            {
              type: "button",
              class: "icon-button pinned-unpin",
              title: "Unpin",
              "aria-label": `Unpin message #${pin.index}`,
              on: { click: () => toggle(pin.messageId) },
            },
            icon("x", "small"),
          ),
        );
      }),
    ),
  );
}

export function initPins() {
  on("pins", renderPins);
  on("conversation", renderPins);
}
