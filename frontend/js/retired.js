// The notice on a conversation whose model its provider has retired.
//
// A retired model refuses every request, so the conversation says so above the composer
// and offers the provider's current model. Switching keeps the whole history; when the
// new model's window is smaller, the next turn folds the older part first.

import { api } from "./api.js";
import { byId, h, icon } from "./dom.js";
import { notifyError } from "./notices.js";
import { on, state, update } from "./state.js";
import { updateContext } from "./meter.js";

export function initRetiredNotice() {
  on("context", render);
  on("conversation", render);
}

function render() {
  const status = byId("composer-status");
  const existing = status.querySelector(".retired-model");
  const context = state.context;
  if (!state.currentId || context?.modelLifecycle !== "retired") {
    existing?.remove();
    return;
  }
  const replacement = context.modelReplacement;
  const element = h(
    "div",
    { class: "retired-model", role: "status" },
    icon("triangle-alert", "small"),
    h("span", {
      text: replacement
        ? `${context.model} was retired by its provider and no longer answers. Switch to ${replacement}: the whole history stays, and older messages fold first if its window is smaller.`
        : `${context.model} was retired by its provider and no longer answers. Pick another model for this conversation.`,
    }),
    replacement
      ? h("button", {
          type: "button",
          class: "link-button",
          text: `Switch to ${replacement}`,
          on: { click: () => switchModel(replacement) },
        })
      : null,
  );
  if (existing) {
    existing.replaceWith(element);
  } else {
    status.append(element);
  }
}

async function switchModel(model) {
  const id = state.currentId;
  try {
    const conversation = await api.updateConversation(id, { model });
    if (id !== state.currentId) {
      return;
    }
    update({ conversation: { ...state.conversation, ...conversation } });
    updateContext(await api.context(id, { messages: false }));
  } catch (error) {
    notifyError("Could not switch the model", error);
  }
}
