// The open conversation's own model and system prompt (the ⋯ menu's "Model and
// instructions"). The models are the providers' lists and the configured ones, grouped by
// provider with each model's context window; choosing a smaller window says what will
// happen to the context before it is saved.

import { api } from "./api.js";
import { openModal } from "./dialog.js";
import { h } from "./dom.js";
import { formatTokens } from "./format.js";
import { notifyError } from "./notices.js";
import { emit, state } from "./state.js";

/**
 * Every model the person can pick, `{name, provider, contextWindow, maxOutputTokens}` by
 * provider: the providers' lists (GET /api/models) and the models configured in Settings
 * (whose limits win), plus the conversation's own model if neither has it.
 */
async function modelsByProvider(current) {
  const all = new Map();
  try {
    const listed = await api.listModels();
    for (const model of listed.models) {
      all.set(model.id, { name: model.id, ...model });
    }
  } catch {
    // The configured models below are enough to pick from.
  }
  for (const [name, model] of Object.entries(state.settings?.models ?? {})) {
    all.set(name, { ...all.get(name), name, ...model });
  }
  if (current && !all.has(current)) {
    all.set(current, { name: current, provider: "current" });
  }
  const groups = new Map();
  for (const model of all.values()) {
    const provider = model.provider ?? "other";
    if (!groups.has(provider)) {
      groups.set(provider, []);
    }
    groups.get(provider).push(model);
  }
  return groups;
}

/** @param {ModelOut} model */
function windowOf(model) {
  return model?.contextWindow ? `${formatTokens(model.contextWindow)} window` : "window unknown";
}

/**
 * What switching to `model` does to the context, in words (or "" when nothing changes).
 * @param {ModelOut} model
 */
function consequence(model) {
  const tokens = state.context?.tokens;
  if (!model?.contextWindow || !Number.isFinite(tokens)) {
    return "";
  }
  // The budget and threshold the server folds at, so the promise below is what happens:
  // the count is the server's (a model switched to is counted with its provider's
  // calibration, so the meter shows the same number after the switch).
  const budget = model.workingBudget || model.contextWindow - (model.maxOutputTokens ?? 0);
  const soft = state.context?.thresholds?.soft ?? 0.8;
  if (tokens >= budget * soft) {
    return `The context now holds about ${formatTokens(tokens)} tokens, past the fold point of this model's ${formatTokens(budget)}-token budget: older messages fold into a summary before its first answer. Nothing is deleted.`;
  }
  if (tokens >= budget * (soft - 0.1)) {
    return `The context (about ${formatTokens(tokens)} tokens) is close to this model's ${formatTokens(budget)}-token budget: expect a fold soon.`;
  }
  return "";
}

export async function openConversationSettings({ afterSave }) {
  const conversation = state.conversation;
  if (!conversation) {
    return;
  }
  const current = conversation.model ?? state.settings?.defaults?.model ?? "";
  const groups = await modelsByProvider(current);
  const models = new Map();
  const select = h("select", { class: "select", id: "conversation-model" });
  for (const [provider, list] of groups) {
    const group = h("optgroup", { label: provider });
    for (const model of list) {
      models.set(model.name, model);
      group.append(
        h("option", {
          value: model.name,
          text: `${model.name} · ${windowOf(model)}`,
          selected: model.name === current,
        }),
      );
    }
    select.append(group);
  }
  const note = h("p", { class: "field-help", id: "conversation-model-note", "aria-live": "polite" });
  const showNote = () => {
    note.textContent = consequence(models.get(select.value));
  };
  select.addEventListener("change", showNote);
  showNote();
  const prompt = h("textarea", {
    class: "textarea",
    id: "conversation-system-prompt",
    rows: "6",
    maxlength: "100000",
    placeholder: "Instructions the model gets before every message of this conversation.",
  });
  prompt.value = conversation.systemPrompt;
  const save = h("button", {
    type: "button",
    class: "button primary",
    id: "conversation-settings-save",
    text: "Save",
  });
  const cancel = h("button", { type: "button", class: "button", text: "Cancel" });
  const dialog = openModal({
    title: "Model and instructions",
    subtitle: "For this conversation only; new conversations use the defaults in Settings.",
    id: "conversation-settings",
    body: h(
      "div",
      { class: "modal-body" },
      h(
        "label",
        { class: "field" },
        h("span", { class: "field-label", text: "Model" }),
        select,
        note,
      ),
      h(
        "label",
        { class: "field" },
        h("span", { class: "field-label", text: "System prompt" }),
        prompt,
      ),
    ),
    foot: h("div", { class: "modal-foot" }, cancel, save),
  });
  cancel.addEventListener("click", () => dialog.close());
  save.addEventListener("click", async () => {
    save.disabled = true;
    try {
      const fields = { systemPrompt: prompt.value };
      if (select.value) {
        fields.model = select.value;
      }
      const saved = await api.updateConversation(conversation.id, fields);
      if (state.currentId === conversation.id) {
        state.conversation = { ...state.conversation, ...saved };
        emit("conversation", state.conversation);
      }
      dialog.close();
      await afterSave?.();
    } catch (error) {
      save.disabled = false;
      notifyError("Could not save the conversation's settings", error);
    }
  });
}
