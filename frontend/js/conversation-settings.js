// The open conversation's own model and system prompt (the ⋯ menu's "Model and
// instructions"). The models are the providers' lists and the configured ones, grouped by
// provider with each model's context window; choosing another model says what will happen
// to the context before it is saved, from the server's count of the view for that model.

import { api } from "./api.js";
import { openModal } from "./dialog.js";
import { h } from "./dom.js";
import { formatTokens } from "./format.js";
import { field, numberOrNull } from "./settings-fields.js";
import { choiceKey, describeChoice, findChoice, loadModelChoices } from "./model-choices.js";
import { notifyError } from "./notices.js";
import { state, update } from "./state.js";

/**
 * What switching to the model `context` was counted for does to the conversation, in
 * words. `context` is the server's count of the view for that model (`GET …/context?model=`):
 * the same computation the meter shows once the switch is saved and the next turn's gate
 * folds by, so the number here is the number there.
 * @param {ContextOut} context
 */
function consequence(context) {
  const approx = context.exact ? "" : "≈";
  const holds = `On this model the context comes to ${approx}${formatTokens(context.tokens)} tokens`;
  const budget = context.inputBudget;
  if (!budget) {
    return `${holds}; its window has no limit, so nothing folds automatically.`;
  }
  const unknown = context.modelKnown ? "" : " (its window is unknown: a cautious size is assumed)";
  const of = `${holds} of its ${formatTokens(budget)}-token budget${unknown}`;
  const { soft, hard } = context.thresholds;
  if (context.tokens < budget * (soft - 0.1)) {
    return `${of}.`;
  }
  if (state.settings?.compaction?.auto === false) {
    return `${of}. Automatic folding is off: use Compact before sending if it does not fit.`;
  }
  if (context.tokens >= budget * hard) {
    return `${of}: older messages fold into a summary before its first answer. Nothing is deleted.`;
  }
  if (context.tokens >= budget * soft) {
    return `${of}, past its fold point: its first answer fits as it is, and older messages fold into a summary soon after (written in the background meanwhile). Nothing is deleted.`;
  }
  return `${of}, close to its fold point: expect a fold soon.`;
}

export async function openConversationSettings({ afterSave }) {
  const conversation = state.conversation;
  if (!conversation) {
    return;
  }
  const current = conversation.model ?? state.settings?.defaults?.model ?? "";
  // One entry per provider and id: a model two providers offer is two options.
  const groups = await loadModelChoices({ refresh: true });
  const selected = findChoice(groups, { model: current, provider: conversation.provider ?? null });
  const currentKey = selected ? choiceKey(selected.provider, selected.id) : choiceKey("", current);
  const select = h("select", { class: "select", id: "conversation-model" });
  let currentOption = null;
  for (const [, list] of groups) {
    const group = h("optgroup", { label: list[0].providerLabel });
    for (const choice of list) {
      const key = choiceKey(choice.provider, choice.id);
      // The value is the id (two providers' entries share it); the provider rides along.
      const option = h("option", {
        value: choice.id,
        text: `${choice.id} · ${describeChoice(choice)}`,
        selected: key === currentKey,
        dataset: { model: choice.id, provider: choice.provider },
      });
      if (key === currentKey) {
        currentOption = option;
      }
      group.append(option);
    }
    select.append(group);
  }
  if (!selected && current) {
    currentOption = h("option", {
      value: current,
      text: current,
      selected: true,
      dataset: { model: current, provider: "" },
    });
    select.append(currentOption);
  }
  const unchanged = () => select.selectedOptions[0] === currentOption;
  const picked = () => {
    const option = select.selectedOptions[0];
    return { model: option?.dataset.model ?? "", provider: option?.dataset.provider || null };
  };
  const note = h("p", { class: "field-help", id: "conversation-model-note", "aria-live": "polite" });
  let asked = 0;
  const showNote = async () => {
    const { model, provider } = picked();
    const ask = ++asked;
    delete note.dataset.tokens;
    note.textContent = "";
    if (!model || unchanged()) {
      return;
    }
    note.textContent = "Counting the conversation for this model…";
    try {
      const context = await api.context(conversation.id, {
        messages: false,
        model,
        provider: provider ?? undefined,
      });
      if (ask === asked) {
        note.dataset.tokens = String(context.tokens);
        note.textContent = consequence(context);
      }
    } catch (error) {
      if (ask === asked) {
        note.textContent = `The conversation could not be counted for this model: ${error.message}`;
      }
    }
  };
  select.addEventListener("change", showNote);
  const prompt = h("textarea", {
    class: "textarea",
    id: "conversation-system-prompt",
    rows: "6",
    maxlength: "100000",
    placeholder: "Instructions the model gets before every message of this conversation.",
  });
  prompt.value = conversation.systemPrompt;
  // How this conversation samples and how long an answer may be (`settings.generation`),
  // over the model's settings; empty = the model's.
  const generation = conversation.settings?.generation ?? {};
  const temperature = h("input", {
    class: "input",
    id: "conversation-temperature",
    inputmode: "decimal",
    placeholder: "the model's",
    ".value": generation.temperature ?? "",
  });
  const maxOutput = h("input", {
    class: "input",
    id: "conversation-max-output",
    inputmode: "numeric",
    placeholder: "the model's",
    ".value": generation.maxOutputTokens ?? "",
  });
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
      h(
        "div",
        { class: "field-row" },
        field("Temperature", temperature, "0 to 2; empty: the model's (Settings → Models)."),
        field("Max output tokens", maxOutput, "The longest answer; empty: the model's."),
      ),
    ),
    foot: h("div", { class: "modal-foot" }, cancel, save),
  });
  cancel.addEventListener("click", () => dialog.close());
  save.addEventListener("click", async () => {
    save.disabled = true;
    try {
      const fields = { systemPrompt: prompt.value };
      const wanted = {
        temperature: numberOrNull(temperature.value),
        maxOutputTokens: numberOrNull(maxOutput.value),
      };
      if (Number.isNaN(wanted.temperature) || Number.isNaN(wanted.maxOutputTokens)) {
        throw new Error("Temperature and max output take numbers.");
      }
      const own = Object.fromEntries(Object.entries(wanted).filter(([, v]) => v !== null));
      if (JSON.stringify(own) !== JSON.stringify(generation)) {
        const settings = { ...(conversation.settings ?? {}) };
        if (Object.keys(own).length) {
          settings.generation = own;
        } else {
          delete settings.generation;
        }
        fields.settings = settings;
      }
      const { model, provider } = picked();
      if (model && !unchanged()) {
        fields.model = model;
        if (provider) {
          fields.provider = provider;
        }
      }
      const saved = await api.updateConversation(conversation.id, fields);
      if (state.currentId === conversation.id) {
        update({ conversation: { ...state.conversation, ...saved } });
      }
      dialog.close();
      await afterSave?.();
    } catch (error) {
      save.disabled = false;
      notifyError("Could not save the conversation's settings", error);
    }
  });
}
