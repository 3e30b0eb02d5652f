// "What the model sees": the exact message list of the next request, from GET /context.
//
// Shown as plain text on purpose: this panel is for checking what is sent, so nothing is
// rendered or reformatted (the summary is the first message when a fold is current).

import { api } from "./api.js";
import { byId, h, icon } from "./dom.js";
import { formatInteger, formatTokens } from "./format.js";
import { updateContext } from "./meter.js";
import { notifyError } from "./notices.js";
import { on, state } from "./state.js";

let open = false;
let loading = 0;

export function initModelView() {
  byId("model-view-button").addEventListener("click", () => toggleModelView());
  on("busy", (busy) => {
    if (open && !busy) {
      refreshModelView();
    }
  });
  on("compactions", () => {
    if (open) {
      refreshModelView();
    }
  });
}

export function isModelViewOpen() {
  return open;
}

export function toggleModelView(force) {
  open = force ?? !open;
  byId("model-view").hidden = !open;
  byId("app").classList.toggle("with-model-view", open);
  byId("model-view-button").setAttribute("aria-pressed", String(open));
  if (open) {
    refreshModelView();
  }
}

function partText(part) {
  switch (part.kind) {
    case "text":
      return part.text;
    case "reasoning":
      return `[reasoning] ${part.text}`;
    case "tool-call":
      return `→ ${part.name}(${JSON.stringify(part.input)})  [call ${part.id}]`;
    case "tool-result":
      return `← ${part.name}${part.isError ? " (error)" : ""}  [call ${part.callId}]\n${part.output}`;
    case "attachment": {
      // A person's file shows what it costs in the request (its bytes are not shown).
      const cost =
        part.tokens === null || part.tokens === undefined
          ? ""
          : ` · ${formatTokens(part.tokens)} tokens`;
      return `[attachment ${part.name} · ${part.mediaType}${cost}]${part.text ? `\n${part.text}` : ""}`;
    }
    default:
      return JSON.stringify(part);
  }
}

function item({ role, label, text, kind = "" }) {
  return h(
    "div",
    { class: ["mv-item", kind], dataset: { role } },
    h(
      "div",
      { class: "mv-item-head" },
      h("span", { class: "mv-role", text: role }),
      label ? h("span", { text: label }) : null,
    ),
    // Focusable, so a long message can be scrolled from the keyboard.
    h("pre", { text, tabindex: "0" }),
  );
}

export async function refreshModelView() {
  const panel = byId("model-view");
  const id = state.currentId;
  const mine = ++loading;
  const head = h(
    "div",
    { class: "mv-head" },
    icon("eye"),
    h("h2", { text: "What the model sees" }),
    h(
      "button",
      {
        type: "button",
        class: "icon-button",
        title: "Refresh",
        "aria-label": "Refresh",
        on: { click: () => refreshModelView() },
      },
      icon("rotate-ccw", "small"),
    ),
    h(
      "button",
      {
        type: "button",
        class: "icon-button",
        title: "Close",
        "aria-label": "Close",
        on: { click: () => toggleModelView(false) },
      },
      icon("x"),
    ),
  );
  if (!id) {
    panel.replaceChildren(
      head,
      h("div", { class: "mv-empty", text: "Open a conversation first." }),
    );
    return;
  }
  if (!panel.querySelector(".mv-list")) {
    panel.replaceChildren(
      head,
      h("div", { class: "mv-empty" }, icon("loader", "small spin"), " Loading…"),
    );
  }
  let context;
  try {
    context = await api.context(id);
  } catch (error) {
    if (mine === loading) {
      panel.replaceChildren(head, h("div", { class: "mv-empty", text: error.message }));
      notifyError("Could not load the model's view", error);
    }
    return;
  }
  if (mine !== loading || id !== state.currentId) {
    return;
  }
  updateContext(context);
  const messages = context.apiMessages;
  const fold = context.compaction;
  const summary = h(
    "div",
    { class: "mv-summary" },
    h(
      "div",
      {},
      h("strong", { text: formatInteger(context.tokens) }),
      ` tokens${context.exact === false ? " (estimated)" : ""}`,
      context.inputBudget ? ` of ${formatTokens(context.inputBudget)} budget` : "",
    ),
    h(
      "div",
      {},
      h("strong", { text: formatInteger(messages.length) }),
      ` messages in the request; the history holds ${formatInteger(context.messagesInHistory)}.`,
    ),
    fold
      ? h(
          "div",
          {},
          `Fold v${fold.version} is current: the model sees its summary, then the history from message #${formatInteger(fold.apiStartIndex)}.`,
        )
      : h("div", { text: "No fold yet: the model sees the whole history." }),
    context.tools?.length
      ? h("div", { text: `Tools offered: ${context.tools.join(", ")}.` })
      : null,
  );
  const list = h("div", {
    class: "mv-list",
    id: "mv-list",
    tabindex: "0",
    "aria-label": "Messages of the next request",
  });
  const project = context.project;
  if (project) {
    const shared = [
      `Project “${project.name}”: ${formatInteger(project.tokens)} of its ${formatInteger(project.capTokens)}-token cap, sent in the system prompt with every call, never folded.`,
      project.instructions
        ? `Instructions (sent first):\n${project.instructions}`
        : "No instructions.",
      project.files.length
        ? `Files (sent after the system prompt): ${project.files.join(", ")}`
        : "",
      project.notes.length ? `Pinned notes: ${project.notes.join(", ")}` : "",
    ];
    list.append(
      item({
        role: "project",
        label: `the project's · ${project.name}`,
        text: shared.filter(Boolean).join("\n\n"),
        kind: "system project",
      }),
    );
  }
  if (context.system) {
    list.append(
      item({
        role: "system",
        label: project ? `system prompt, with the project “${project.name}”` : "system prompt",
        text: context.system,
        kind: "system",
      }),
    );
  }
  messages.forEach((message, position) => {
    const isSummary = Boolean(fold) && position === 0;
    const text = message.parts.map(partText).join("\n");
    list.append(
      item({
        role: message.role,
        label: isSummary ? `summary v${fold.version}` : `${position + 1} of ${messages.length}`,
        text,
        kind: isSummary ? "summary" : "",
      }),
    );
  });
  if (!messages.length) {
    list.append(h("div", { class: "mv-empty", text: "No messages yet." }));
  }
  panel.replaceChildren(head, summary, list);
}
