// "New conversation from here": hand the conversation so far to a fresh one.
//
// Every message (its meta row) and every fold line offer the action. A small dialog asks
// for optional instructions for the summary (as for a manual fold) and how many of the
// last messages to copy verbatim; the server writes the new conversation (its model view
// starts with a summary of this one, the pins ride in it) and it opens. The two are
// linked both ways: a bar at the top of the new one says where it came from, a bar at
// the bottom of the old one where it went; both open the other conversation.

import { api } from "./api.js";
import { app } from "./app.js";
import { openModal } from "./dialog.js";
import { byId, h, icon } from "./dom.js";
import { formatInteger } from "./format.js";
import { notify } from "./notices.js";
import { on, state } from "./state.js";

const KEEP_MAX = 1000;

function isBusy() {
  return Boolean(state.busy);
}

/**
 * Open the dialog for a hand-off from message `index` (`messageId` when known; the fold
 * line knows only the index of the last folded message).
 */
export async function openHandoffDialog({ messageId = null, index, fromFold = false }) {
  const conversationId = state.currentId;
  if (!conversationId) {
    return;
  }
  if (isBusy()) {
    notify({ kind: "info", title: "Busy", text: "Wait for the current answer to finish." });
    return;
  }
  const keep = h("input", {
    type: "number",
    class: "input handoff-keep",
    id: "handoff-keep",
    min: "0",
    max: String(KEEP_MAX),
    step: "1",
    value: "0",
  });
  const instructions = h("textarea", {
    class: "textarea",
    id: "handoff-instructions",
    rows: "3",
    maxlength: "20000",
    placeholder: "e.g. Keep the decisions about the schema and the open questions.",
  });
  const message = h("div", { class: "handoff-message", "aria-live": "polite" });
  const where = fromFold
    ? `everything up to this fold (message #${formatInteger(index)})`
    : `everything up to message #${formatInteger(index)}`;
  const body = h(
    "div",
    { class: "modal-body" },
    h("p", {
      class: "handoff-explain",
      text: `The new conversation starts with a summary of ${where} and your pinned messages; the model sees nothing else of this one. This conversation stays as it is, and each links to the other.`,
    }),
    h(
      "label",
      { class: "field" },
      h("span", { class: "field-label", text: "Keep the last messages verbatim" }),
      keep,
      h("span", {
        class: "field-help",
        text: "How many messages up to this point to copy into the new conversation word for word (0: only the summary). A tool call always comes with its result.",
      }),
    ),
    h(
      "label",
      { class: "field" },
      h("span", { class: "field-label", text: "Instructions for the summary (optional)" }),
      instructions,
      h("span", {
        class: "field-help",
        text: fromFold
          ? "Without instructions, the fold's summary is reused as it is (no model call)."
          : "What the summary must keep word for word.",
      }),
    ),
    message,
  );
  const cancel = h("button", { type: "button", class: "button", text: "Cancel" });
  const confirm = h(
    "button",
    { type: "button", class: "button primary", id: "handoff-confirm" },
    icon("corner-down-right", "small"),
    "Start the new conversation",
  );
  let working = false;
  const dialog = openModal({
    title: "New conversation from here",
    subtitle: "Start clean without losing the thread.",
    id: "handoff-dialog",
    body,
    foot: h("div", { class: "modal-foot" }, cancel, confirm),
  });
  cancel.addEventListener("click", () => dialog.close());
  dialog.addEventListener("cancel", (event) => {
    if (working) {
      event.preventDefault(); // the summary is being written; the answer still comes
    }
  });
  confirm.addEventListener("click", async () => {
    const keepLast = Number(keep.value);
    if (!Number.isInteger(keepLast) || keepLast < 0 || keepLast > KEEP_MAX) {
      message.replaceChildren(
        h(
          "div",
          { class: "inline-error" },
          icon("circle-alert", "small"),
          `Keep a whole number of messages from 0 to ${KEEP_MAX}.`,
        ),
      );
      keep.focus();
      return;
    }
    working = true;
    confirm.disabled = cancel.disabled = keep.disabled = instructions.disabled = true;
    message.replaceChildren(
      h(
        "div",
        { class: "progress-row" },
        icon("loader", "small spin"),
        "Writing the summary for the new conversation…",
      ),
    );
    try {
      let pointId = messageId;
      if (!pointId) {
        const page = await api.listMessages(conversationId, { offset: index, limit: 1 });
        pointId = page.messages[0]?.id;
      }
      const created = await api.handOff(conversationId, {
        messageId: pointId,
        keepLast,
        instructions: instructions.value.trim() || undefined,
      });
      working = false;
      dialog.close();
      await app.refreshList();
      await app.open(created.id);
    } catch (error) {
      working = false;
      confirm.disabled = cancel.disabled = keep.disabled = instructions.disabled = false;
      message.replaceChildren(
        h(
          "div",
          { class: "inline-error", dataset: { outcome: "failed" } },
          icon("circle-alert", "small"),
          error.message || "The new conversation could not be created. Nothing was changed.",
        ),
      );
    }
  });
  instructions.focus();
}

/** The button in a message's meta row (messages without a stored id cannot be used yet). */
export function handoffButton(message) {
  if (!message.id || message.role === "tool") {
    return null;
  }
  return h(
    "button",
    {
      type: "button",
      class: "icon-button handoff-button",
      title: "New conversation from here",
      "aria-label": `New conversation from message #${message.index}`,
      on: { click: () => openHandoffDialog({ messageId: message.id, index: message.index }) },
    },
    icon("corner-down-right", "small"),
  );
}

/** The action on a fold line: hand off everything the fold covers. */
export function foldHandoffAction(fold) {
  if (fold.trigger === "handoff" || !(fold.apiStartIndex > 0)) {
    return null;
  }
  return h(
    "button",
    {
      type: "button",
      class: "link-button fold-handoff",
      title: "Start a new conversation from this fold's summary",
      on: {
        click: () => openHandoffDialog({ index: fold.apiStartIndex - 1, fromFold: true }),
      },
    },
    icon("corner-down-right", "small"),
    "New conversation from here",
  );
}

function link(conversation, label) {
  return h(
    "button",
    {
      type: "button",
      class: "link-button handoff-link",
      dataset: { conversationId: conversation.conversationId },
      title: `Open “${conversation.title}”`,
      on: { click: () => app.open(conversation.conversationId) },
    },
    icon("corner-down-right", "small"),
    `${label} `,
    h("strong", { text: conversation.title }),
  );
}

/** The origin bar (top) and the hand-offs bar (bottom) of the open conversation. */
export function renderHandoffLinks() {
  const conversation = state.conversation;
  const origin = byId("handoff-origin");
  const handoffs = byId("handoff-links");
  if (!origin || !handoffs) {
    return;
  }
  const from = conversation?.origin ?? null;
  origin.hidden = !from;
  origin.replaceChildren(...(from ? [link(from, "Continued from")] : []));
  const to = conversation?.handoffs ?? [];
  handoffs.hidden = to.length === 0;
  handoffs.classList.remove("expanded");
  // On a phone only the newest shows, with a button for the earlier ones (handoff.css).
  const more =
    to.length > 1
      ? h("button", {
          type: "button",
          class: "link-button handoff-more",
          "aria-expanded": "false",
          text: `+${to.length - 1} earlier`,
          title: "Show every conversation that continues this one",
          on: {
            click: (event) => {
              const open = handoffs.classList.toggle("expanded");
              event.currentTarget.setAttribute("aria-expanded", String(open));
              event.currentTarget.textContent = open ? "Fewer" : `+${to.length - 1} earlier`;
            },
          },
        })
      : null;
  const links = to.map((item) => link(item, "Continued in"));
  links.at(-1)?.classList.add("newest");
  handoffs.replaceChildren(...links, ...(more ? [more] : []));
}

export function initHandoff() {
  const chat = byId("chat");
  const scroll = byId("chat-scroll");
  chat.prepend(h("nav", { class: "handoff-bar origin", id: "handoff-origin", hidden: true }));
  scroll.after(h("nav", { class: "handoff-bar handoffs", id: "handoff-links", hidden: true }));
  byId("handoff-origin").setAttribute("aria-label", "Where this conversation came from");
  byId("handoff-links").setAttribute("aria-label", "Conversations that continue this one");
  on("conversation", renderHandoffLinks);
}
