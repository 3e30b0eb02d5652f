// The reasoning effort of the open conversation: a small select beside the model name.
// It shows the model's own effort as "Default"; a choice is stored in the conversation's
// settings (`settings.reasoning.effort`) and applies from the next model call. It is
// shown only for models that reason (GET /api/models says which).

import { api } from "./api.js";
import { byId, h } from "./dom.js";
import { notify, notifyError } from "./notices.js";
import { on, state, update } from "./state.js";

const EFFORTS = ["off", "low", "medium", "high", "max"];
const LABELS = { off: "Off", low: "Low", medium: "Medium", high: "High", max: "Max" };

/** @type {Map<string, ModelOut> | null} The models by id, loaded on first use. */
let models = null;

async function modelInfo(id) {
  if (models === null) {
    models = new Map();
    try {
      for (const model of (await api.listModels()).models) {
        models.set(model.id, model);
      }
    } catch {
      // Without the list the control stays hidden; the conversation still runs on the
      // model's own effort.
    }
  }
  return models.get(id) ?? null;
}

function conversationEffort(conversation) {
  const effort = conversation?.settings?.reasoning?.effort;
  return EFFORTS.includes(effort) ? effort : "";
}

async function render() {
  const select = byId("effort-select", HTMLSelectElement);
  const conversation = state.conversation;
  const modelId = conversation?.model ?? state.settings?.defaults?.model;
  const model = conversation && modelId ? await modelInfo(modelId) : null;
  const wrap = byId("effort-control");
  wrap.hidden = !model?.reasons;
  if (!model?.reasons) {
    return;
  }
  select.replaceChildren(
    h("option", { value: "", text: `Default (${LABELS[model.reasoningEffort]})` }),
    ...EFFORTS.map((effort) => h("option", { value: effort, text: LABELS[effort] })),
  );
  select.value = conversationEffort(conversation);
}

async function choose() {
  const conversation = state.conversation;
  const select = byId("effort-select", HTMLSelectElement);
  if (!conversation) {
    return;
  }
  const settings = { ...(conversation.settings ?? {}) };
  if (select.value) {
    settings.reasoning = { effort: select.value };
  } else {
    delete settings.reasoning;
  }
  try {
    const saved = await api.updateConversation(conversation.id, { settings });
    if (saved.id === state.currentId) {
      update({ conversation: saved });
    }
    notify({
      title: "Reasoning effort changed",
      text: "The next answer reads the conversation once without the prompt cache.",
      timeout: 5000,
    });
  } catch (error) {
    select.value = conversationEffort(conversation);
    notifyError("Could not change the reasoning effort", error);
  }
}

export function initEffortControl() {
  byId("effort-select").addEventListener("change", choose);
  on("conversation", render);
  on("settings", () => {
    models = null;
    render();
  });
}
