// MCP tools in the chat: the approval card of a call that waits for the person (the
// Settings tab of the servers is mcp-panel.js).
//
// The card sits above the composer while its call waits; it goes away when the person
// decides, when the server says the call was resolved, or when the turn ends (Stop
// abandons the call).

import { api } from "./api.js";
import { byId, h, icon } from "./dom.js";
import { notifyError } from "./notices.js";
import { on } from "./state.js";

// ---- approval ---------------------------------------------------------------------------

function cardFor(callId) {
  return byId("composer-status").querySelector(
    `.approval-card[data-call-id="${CSS.escape(callId)}"]`,
  );
}

/**
 * Show the card of a `tool.approval_required` event.
 * @param {ApprovalRequired} data
 */
export function showApproval(conversationId, data) {
  if (cardFor(data.callId)) {
    return;
  }
  const buttons = h("div", { class: "approval-actions" });
  const card = h(
    "div",
    {
      class: "approval-card",
      role: "alertdialog",
      "aria-label": `Approve ${data.tool} of ${data.server}`,
      dataset: { callId: data.callId, conversationId },
    },
    h(
      "div",
      { class: "approval-title" },
      icon("wrench", "small"),
      h("span", { text: "The model wants to run " }),
      h("code", { text: data.tool }),
      h("span", { text: " of the MCP server " }),
      h("strong", { text: data.server }),
    ),
    h("pre", { class: "approval-arguments", text: JSON.stringify(data.arguments, null, 2) }),
    buttons,
  );
  const decide = async (decision) => {
    for (const button of buttons.children) {
      button.disabled = true;
    }
    try {
      await api.decideApproval(conversationId, data.callId, decision);
      card.remove();
    } catch (error) {
      for (const button of buttons.children) {
        button.disabled = false;
      }
      notifyError("The decision was not taken", error);
    }
  };
  for (const [decision, label, style] of [
    ["allow", "Allow once", "primary"],
    ["always", "Always allow this tool", ""],
    ["deny", "Deny", "danger"],
  ]) {
    buttons.append(
      h("button", {
        type: "button",
        class: ["button", style],
        dataset: { decision },
        text: label,
        on: { click: () => decide(decision) },
      }),
    );
  }
  byId("composer-status").append(card);
  buttons.firstElementChild.focus();
}

/** A `tool.approval_resolved` event: the call went on (or was denied) elsewhere. */
export function hideApproval(callId) {
  cardFor(callId)?.remove();
}

/** The turn ended: no call waits any more. */
export function clearApprovals() {
  for (const card of byId("composer-status").querySelectorAll(".approval-card")) {
    card.remove();
  }
}

// A page opened (or reloaded) while a call waits shows its card too: the event that
// announced it went to the stream the old page was reading.
on("conversation", async (conversation) => {
  const cards = byId("composer-status").querySelectorAll(".approval-card");
  for (const card of /** @type {NodeListOf<HTMLElement>} */ (cards)) {
    if (card.dataset.conversationId !== conversation?.id) {
      card.remove();
    }
  }
  if (!conversation?.id) {
    return;
  }
  try {
    const { items } = await api.pendingApprovals(conversation.id);
    for (const pending of items) {
      showApproval(conversation.id, pending);
    }
  } catch {
    // The chat works without the cards; the next open tries again.
  }
});
