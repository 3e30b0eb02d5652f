// MCP in the chat while a call runs: the server's questions (elicitation) as a form above
// the composer, and the call's progress on its tool card.
//
// A form is built from the server's flat JSON schema: text (with its format: email, URL,
// date), whole and decimal numbers, yes/no, one choice of several, several choices. The
// schema's defaults are filled in. Submit sends the values (the server checks them again;
// so does Foldline first, and a wrong field is named); Decline says no; Cancel dismisses.
// A URL question shows the address and opens it in the system browser only when the
// person presses Open.

import { api } from "./api.js";
import { byId, h, icon } from "./dom.js";
import { notifyError } from "./notices.js";
import { on } from "./state.js";

function formFor(elicitationId) {
  return byId("composer-status").querySelector(
    `.elicitation-card[data-elicitation-id="${CSS.escape(elicitationId)}"]`,
  );
}

/** The options of an enum property: `[value, label]` pairs, or null. */
function choices(schema) {
  if (Array.isArray(schema.enum)) {
    const names = Array.isArray(schema.enumNames) ? schema.enumNames : [];
    return schema.enum.map((value, i) => [value, names[i] ?? String(value)]);
  }
  const options = schema.oneOf ?? schema.anyOf;
  if (Array.isArray(options) && options.every((o) => o && "const" in o)) {
    return options.map((o) => [o.const, o.title ?? String(o.const)]);
  }
  return null;
}

const INPUT_TYPES = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

/** One field of the form, and how to read its value back. */
function field(name, schema, required) {
  const label = schema.title || name;
  const id = `elicit-${name}-${Math.random().toString(36).slice(2, 8)}`;
  const wrap = h("div", { class: "elicitation-field", dataset: { field: name } });
  const caption = h("label", { for: id, text: required ? `${label} *` : label });
  const help = schema.description
    ? h("div", { class: "elicitation-help", text: schema.description })
    : null;
  let read;
  if (schema.type === "boolean") {
    const box = h("input", { type: "checkbox", id, checked: schema.default === true });
    wrap.append(h("div", { class: "elicitation-check" }, box, caption), help ?? "");
    read = () => box.checked;
    return { wrap, read };
  }
  if (schema.type === "array") {
    const options = choices(schema.items ?? {}) ?? [];
    const selected = new Set(Array.isArray(schema.default) ? schema.default : []);
    const boxes = options.map(([value, text]) => {
      const box = h("input", { type: "checkbox", value, checked: selected.has(value) });
      return [value, box, h("label", { class: "elicitation-option" }, box, text)];
    });
    wrap.append(
      h("div", { class: "elicitation-label", text: caption.textContent }),
      h("div", { class: "elicitation-options" }, ...boxes.map((b) => b[2])),
      help ?? "",
    );
    read = () => boxes.filter((b) => b[1].checked).map((b) => b[0]);
    return { wrap, read };
  }
  const options = choices(schema);
  let input;
  if (options) {
    input = h(
      "select",
      { id },
      required ? null : h("option", { value: "", text: "—" }),
      ...options.map(([value, text]) =>
        h("option", { value, text, selected: value === schema.default }),
      ),
    );
  } else {
    const numeric = schema.type === "number" || schema.type === "integer";
    input = h("input", {
      id,
      type: numeric ? "number" : (INPUT_TYPES[schema.format] ?? "text"),
      value: schema.default ?? "",
      step: schema.type === "integer" ? "1" : numeric ? "any" : null,
      min: schema.minimum ?? null,
      max: schema.maximum ?? null,
    });
  }
  wrap.append(caption, input, help ?? "");
  read = () => input.value;
  return { wrap, read };
}

/**
 * Show the form (or the URL question) of a `tool.elicitation_required` event.
 * @param {ElicitationRequired} data
 */
export function showQuestion(conversationId, data) {
  if (formFor(data.elicitationId)) {
    return;
  }
  const properties = data.requestedSchema?.properties ?? {};
  const required = new Set(data.requestedSchema?.required ?? []);
  /** @type {Array<[string, ReturnType<typeof field>]>} */
  const fields = Object.entries(properties).map(([name, schema]) => [
    name,
    field(name, schema, required.has(name)),
  ]);
  const problem = h("div", { class: "elicitation-problem", role: "alert", hidden: true });
  const buttons = h("div", { class: "approval-actions" });
  const card = h(
    "form",
    {
      class: ["approval-card", "elicitation-card"],
      // Foldline checks the answer against the schema and names the wrong field; the
      // browser's own bubbles would stop the submit without saying which rule it broke.
      novalidate: true,
      role: "dialog",
      "aria-label": `A question from ${data.server}`,
      dataset: { elicitationId: data.elicitationId, callId: data.callId, conversationId },
    },
    h(
      "div",
      { class: "approval-title" },
      icon("wrench", "small"),
      h("span", { text: "The MCP server " }),
      h("strong", { text: data.server }),
      h("span", { text: data.mode === "url" ? " asks you to open a page:" : " asks:" }),
    ),
    h("p", { class: "elicitation-message", text: data.message }),
    data.mode === "url" ? h("code", { class: "elicitation-url", text: data.url ?? "" }) : null,
    fields.length
      ? h("div", { class: "elicitation-fields" }, ...fields.map(([, f]) => f.wrap))
      : null,
    problem,
    buttons,
  );
  const answer = async (action) => {
    let content;
    if (action === "accept" && data.mode === "form") {
      content = Object.fromEntries(fields.map(([name, f]) => [name, f.read()]));
    }
    for (const button of buttons.children) {
      button.disabled = true;
    }
    try {
      await api.answerElicitation(conversationId, data.elicitationId, action, content);
      card.remove();
    } catch (error) {
      for (const button of buttons.children) {
        button.disabled = false;
      }
      if (error?.status === 422) {
        problem.hidden = false;
        problem.textContent = error.message;
      } else {
        notifyError("The answer was not sent", error);
      }
    }
  };
  // Only a web page is ever opened (the server declines other URLs before asking).
  const opensPage = data.mode !== "url" || /^https?:\/\/[^\s\\]+$/i.test(data.url ?? "");
  card.addEventListener("submit", (event) => {
    event.preventDefault();
    if (opensPage) {
      answer("accept");
    }
  });
  buttons.append(
    h("button", {
      type: "submit",
      class: "button primary",
      dataset: { action: "accept" },
      text: data.mode === "url" ? "Open in browser" : "Submit",
      disabled: !opensPage,
    }),
    h("button", {
      type: "button",
      class: "button",
      dataset: { action: "decline" },
      text: "Decline",
      on: { click: () => answer("decline") },
    }),
    h("button", {
      type: "button",
      class: "button",
      dataset: { action: "cancel" },
      text: "Cancel",
      on: { click: () => answer("cancel") },
    }),
  );
  byId("composer-status").append(card);
  (card.querySelector("input, select") ?? buttons.firstElementChild).focus();
}

/** A `tool.elicitation_resolved` event: answered elsewhere, or dropped by Stop. */
export function hideQuestion(elicitationId) {
  formFor(elicitationId)?.remove();
}

/** The turn ended: no question waits any more. */
export function clearQuestions() {
  for (const card of byId("composer-status").querySelectorAll(".elicitation-card")) {
    card.remove();
  }
}

/**
 * A `tool.progress` event: a bar (and the server's words) on the running call's card.
 * @param {ToolProgress} data
 */
export function showToolProgress(data) {
  const card = document.querySelector(`.tool-card[data-call-id="${CSS.escape(data.callId)}"]`);
  if (!card) {
    return;
  }
  let line = card.querySelector(".tool-progress");
  if (!line) {
    // In the summary line, so it shows while the card is folded too.
    line = h(
      "span",
      { class: "tool-progress" },
      h("progress", { max: 1 }),
      h("span", { class: "tool-progress-text" }),
    );
    card.querySelector("summary")?.append(line);
  }
  const bar = line.querySelector("progress");
  const text = line.querySelector(".tool-progress-text");
  if (data.total) {
    bar.max = data.total;
    bar.value = Math.min(data.progress, data.total);
    text.textContent = `${data.message ? `${data.message} — ` : ""}${data.progress} of ${data.total}`;
  } else {
    bar.removeAttribute("value");
    text.textContent = data.message ?? `${data.progress}`;
  }
}

// A page opened (or reloaded) while a server waits for an answer shows its form too.
on("conversation", async (conversation) => {
  const cards = byId("composer-status").querySelectorAll(".elicitation-card");
  for (const card of /** @type {NodeListOf<HTMLElement>} */ (cards)) {
    if (card.dataset.conversationId !== conversation?.id) {
      card.remove();
    }
  }
  if (!conversation?.id) {
    return;
  }
  try {
    const { items } = await api.pendingElicitations(conversation.id);
    for (const pending of items) {
      showQuestion(conversation.id, pending);
    }
  } catch {
    // The chat works without the forms; the next open tries again.
  }
});
