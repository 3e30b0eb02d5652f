// The model picker: the model of the open conversation (or of the next new one) in the
// top bar and on the start screen, and a list to choose another, grouped by provider,
// each model with its window and price. A model two providers offer is two entries; the
// choice saves the provider with the model (PATCH …{model, provider}), and a new
// conversation is created with the draft's choice.
//
// The list is the combobox pattern: a filter box keeps the focus, the arrows move the
// active option (aria-activedescendant), Enter chooses, Esc closes back to the button.

import { api } from "./api.js";
import { app } from "./app.js";
import { byId, h, icon } from "./dom.js";
import {
  choiceKey,
  currentChoice,
  describeChoice,
  findChoice,
  loadModelChoices,
} from "./model-choices.js";
import { notify, notifyError } from "./notices.js";
import { on, state, update } from "./state.js";

let popover = null;
let opener = null;

/** The label of the current choice, on every picker button. */
export function renderPickers() {
  const { model, provider } = currentChoice();
  const buttons = document.querySelectorAll(".model-picker-button");
  for (const button of /** @type {NodeListOf<HTMLElement>} */ (buttons)) {
    const label = button.querySelector(".model-name");
    label.textContent = model || "Choose a model";
    button.dataset.provider = provider ?? "";
    button.setAttribute(
      "aria-label",
      model ? `Model: ${model}${provider ? ` from ${provider}` : ""}. Choose another` : "Choose a model",
    );
  }
}

/** A picker button (the start screen draws one of its own). */
export function pickerButton(id) {
  const button = h(
    "button",
    {
      type: "button",
      class: "model-picker-button",
      id,
      "aria-haspopup": "listbox",
      "aria-expanded": "false",
      title: "Choose the model (Ctrl+Shift+P)",
    },
    h("span", { class: "model-name" }),
    icon("chevron-down", "small"),
  );
  return wire(button);
}

function wire(button) {
  button.addEventListener("click", (event) => {
    event.stopPropagation();
    if (popover && opener === button) {
      closePicker();
    } else {
      openPicker(button);
    }
  });
  return button;
}

export function initModelPicker() {
  wire(byId("model-picker-button"));
  on("conversation", renderPickers);
  on("settings", renderPickers);
  document.addEventListener("click", (event) => {
    if (popover && !popover.contains(event.target)) {
      closePicker();
    }
  });
  renderPickers();
}

/** Open the list under `button` (the top bar's when not given). */
export async function openPicker(button = byId("model-picker-button")) {
  closePicker();
  if (!button || button.offsetParent === null) {
    button = document.querySelector(".model-picker-button:not([hidden])");
  }
  opener = button;
  const filter = h("input", {
    class: "input model-filter",
    type: "text",
    role: "combobox",
    "aria-expanded": "true",
    "aria-controls": "model-options",
    "aria-autocomplete": "list",
    "aria-label": "Filter models",
    placeholder: "Filter models…",
    autocomplete: "off",
  });
  const list = h("div", { class: "model-options", id: "model-options", role: "listbox", "aria-label": "Models" });
  popover = h(
    "div",
    { class: "model-picker", id: "model-picker" },
    filter,
    list,
    h("p", { class: "model-picker-foot", text: "Loading the providers' models…" }),
  );
  document.body.append(popover);
  place(popover, button);
  button.setAttribute("aria-expanded", "true");
  filter.focus();
  // The keys are wired before the providers answer, so Esc and Tab close the list even
  // while a slow server is still being asked for its models.
  let options = [];
  let active = -1;
  filter.addEventListener("keydown", (event) => {
    const moves = { ArrowDown: active + 1, ArrowUp: active - 1, Home: 0, End: options.length - 1 };
    if (event.key in moves && (event.key.startsWith("Arrow") || !filter.value)) {
      event.preventDefault();
      activate(moves[event.key]);
    } else if (event.key === "Enter") {
      event.preventDefault();
      if (options[active]) {
        choose(options[active].choice);
      }
    } else if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      closePicker({ refocus: true });
    } else if (event.key === "Tab") {
      closePicker();
    }
  });
  const activate = (index) => {
    options[active]?.option.classList.remove("active");
    active = options.length ? (index + options.length) % options.length : -1;
    const entry = options[active];
    if (entry) {
      entry.option.classList.add("active");
      filter.setAttribute("aria-activedescendant", entry.option.id);
      entry.option.scrollIntoView({ block: "nearest" });
    } else {
      filter.removeAttribute("aria-activedescendant");
    }
  };
  const mine = popover;
  const groups = await loadModelChoices({ refresh: true });
  if (popover !== mine) {
    return;
  }
  const current = findChoice(groups, currentChoice());
  const foot = popover.querySelector(".model-picker-foot");
  foot.textContent = groups.size
    ? "A model two providers offer is listed under each; the conversation keeps the one you choose."
    : "No provider lists a model yet: add one in Settings → Providers.";
  const draw = () => {
    const words = filter.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    list.replaceChildren();
    options = [];
    let n = 0;
    for (const [provider, choices] of groups) {
      const shown = choices.filter((choice) =>
        words.every((word) => `${choice.id} ${provider}`.toLowerCase().includes(word)),
      );
      if (!shown.length) {
        continue;
      }
      const labelId = `model-group-${n++}`;
      const group = h(
        "div",
        { role: "group", "aria-labelledby": labelId, class: "model-group" },
        h("div", { class: "model-group-label", id: labelId, text: shown[0].providerLabel }),
      );
      for (const choice of shown) {
        const selected = current && choice.id === current.id && choice.provider === current.provider;
        const option = h(
          "div",
          {
            role: "option",
            class: "model-option",
            id: `model-option-${options.length}`,
            "aria-selected": selected ? "true" : "false",
            dataset: { model: choice.id, provider: choice.provider },
          },
          h("span", { class: "model-option-name", text: choice.id }),
          h("span", { class: "model-option-meta", text: describeChoice(choice) }),
        );
        option.addEventListener("mousedown", (event) => event.preventDefault());
        option.addEventListener("click", () => choose(choice));
        options.push({ option, choice });
        group.append(option);
      }
      list.append(group);
    }
    if (!options.length) {
      list.append(h("p", { class: "model-picker-empty", text: "No model matches." }));
    }
    const start = Math.max(
      0,
      options.findIndex(({ option }) => option.getAttribute("aria-selected") === "true"),
    );
    activate(start);
  };
  filter.addEventListener("input", draw);
  draw();
}

function place(element, button) {
  const rect = button.getBoundingClientRect();
  const width = Math.min(420, window.innerWidth - 16);
  element.style.width = `${width}px`;
  element.style.left = `${Math.max(8, Math.min(rect.left, window.innerWidth - width - 8))}px`;
  element.style.top = `${rect.bottom + 6}px`;
  element.style.maxHeight = `${Math.max(200, window.innerHeight - rect.bottom - 24)}px`;
}

export function closePicker({ refocus = false } = {}) {
  if (!popover) {
    return;
  }
  popover.remove();
  popover = null;
  opener?.setAttribute("aria-expanded", "false");
  if (refocus) {
    opener?.focus();
  }
}

export function isPickerOpen() {
  return popover !== null;
}

/** @param {import("./model-choices.js").ModelChoice} choice */
async function choose(choice) {
  closePicker({ refocus: true });
  const conversation = state.conversation;
  if (!conversation) {
    update({ draftModel: { model: choice.id, provider: choice.provider } });
    renderPickers();
    return;
  }
  const wanted = choiceKey(choice.provider, choice.id);
  const { model, provider } = currentChoice();
  if (conversation.model && choiceKey(provider ?? "", model) === wanted) {
    return;
  }
  try {
    const saved = await api.updateConversation(conversation.id, {
      model: choice.id,
      provider: choice.provider,
    });
    if (state.currentId === conversation.id) {
      update({ conversation: { ...state.conversation, ...saved } });
    }
    notify({
      kind: "success",
      title: `Model: ${choice.id}`,
      text: `From ${choice.providerLabel}, from the next answer on. The meter shows the context on it.`,
      timeout: 6000,
    });
    await app.refreshContext();
  } catch (error) {
    notifyError("Could not change the model", error);
  }
}
