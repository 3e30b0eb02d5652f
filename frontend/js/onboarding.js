// Onboarding: shown while no provider can answer. Every path ends in a conversation:
// a provider is added (a local server Detect found, a hosted key, or any
// OpenAI-compatible address), its own model list is read (or a model name typed when it
// lists none), one real call tests the model, and a new chat opens on it. A local server
// found by Detect is one click. Every failure says what to do next.
//
// A provider added in Settings instead leads here too: the step that chooses its model.

import { api } from "./api.js";
import { byId, h, icon } from "./dom.js";
import { forgetModelChoices } from "./model-choices.js";
import { notifyError } from "./notices.js";
import { saveSettings } from "./settings.js";
import { state, update } from "./state.js";

/** The model onboarding suggests for a hosted key when the provider's list is not read yet
 * (the server's catalog suggests the same: GET /api/models `suggested`). */
export const SUGGESTED_MODELS = { anthropic: "claude-sonnet-5-5", openai: "gpt-6.2-sol" };

const LABELS = { anthropic: "Anthropic", openai: "OpenAI" };

let onDone = async () => {};
/** @type {(tab?: string) => void} */
let openSettingsAt = () => {};
let step = "start";

export function showOnboarding({ done, openSettings }) {
  onDone = done;
  openSettingsAt = openSettings;
  byId("onboarding").hidden = false;
  showStart();
}

export function hideOnboarding() {
  byId("onboarding").hidden = true;
  step = "start";
}

/**
 * Settings were saved while onboarding shows: a provider that can answer now and no
 * model chosen leads to choosing its model (rather than a Welcome screen that stays).
 * @param {SettingsOut} settings
 */
export function onboardingSettingsChanged(settings) {
  if (byId("onboarding").hidden || step === "model" || step === "busy") {
    return;
  }
  const usable = Object.entries(settings.providers).find(
    ([, p]) => p.hasKey || p.kind === "openai-compatible",
  );
  if (usable && !settings.defaults.model) {
    chooseModel(usable[0]);
  }
}

function page(...children) {
  byId("onboarding").replaceChildren(h("div", { class: "onboarding-inner" }, ...children));
}

function showStart() {
  step = "start";
  const detected = h("div", { class: "choice-list", id: "local-servers" });
  const detectStatus = h("div", { class: "detect-status", "aria-live": "polite" });
  const again = h("button", { type: "button", class: "link-button", text: "Detect again" });
  again.addEventListener("click", () => detect(detected, detectStatus));
  page(
    h("div", { class: "mark" }),
    h("h2", { text: "Welcome to Foldline" }),
    h("p", {
      text: "Connect a model to start. Foldline keeps every message; when the model's context fills up it folds older messages into a summary and shows you exactly where.",
    }),
    h("h3", { class: "field-label", text: "A model on this computer" }),
    detectStatus,
    detected,
    h("div", { class: "detect-status" }, again),
    h("h3", { class: "field-label", text: "A hosted model" }),
    h("div", { class: "choice-list" }, keyChoice("anthropic"), keyChoice("openai")),
    h("h3", { class: "field-label", text: "Another server (llama.cpp, vLLM, a proxy)" }),
    h("div", { class: "choice-list" }, customChoice()),
    h(
      "p",
      { class: "settings-foot-note" },
      "Model limits, prices and tools: ",
      h("button", {
        type: "button",
        class: "link-button",
        text: "open Settings",
        on: { click: () => openSettingsAt("providers") },
      }),
    ),
  );
  detect(detected, detectStatus);
}

async function detect(list, status) {
  status.replaceChildren(
    icon("loader", "small spin"),
    "Looking for Ollama (port 11434) and LM Studio (port 1234)…",
  );
  list.replaceChildren();
  let servers = [];
  try {
    servers = (await api.detectLocal()).servers;
  } catch (error) {
    status.replaceChildren(
      icon("circle-alert", "small"),
      `Detection failed: ${error.message}. Add the server's address below instead.`,
    );
    return;
  }
  const found = servers.filter((server) => server.available);
  if (!found.length) {
    status.replaceChildren(
      icon("info", "small"),
      "No local Ollama or LM Studio answered. Start one and press Detect again, or add its address under “Another server”.",
    );
    return;
  }
  status.replaceChildren(
    icon("check", "small"),
    `Found ${found.map((s) => s.label).join(" and ")}.`,
  );
  list.replaceChildren(...found.map(localChoice));
}

/** @param {LocalServer} server */
function localChoice(server) {
  const select = h(
    "select",
    { class: "select", "aria-label": `${server.label} model` },
    server.models.length
      ? server.models.map((model) => h("option", { value: model, text: model }))
      : h("option", { value: "", text: "no models pulled yet" }),
  );
  const use = h("button", { type: "button", class: "button primary", text: `Use ${server.label}` });
  const result = h("div", { class: "choice-result", "aria-live": "polite" });
  use.addEventListener("click", async () => {
    if (!select.value) {
      result.replaceChildren(
        icon("info", "small"),
        server.name === "ollama"
          ? "Ollama has no model yet: run `ollama pull llama3.2`, then Detect again."
          : `${server.label} has no model loaded: load one in ${server.label}, then Detect again.`,
      );
      return;
    }
    use.disabled = true;
    const ok = await connect(server.name, select.value, result, {
      providers: { [server.name]: { kind: "openai-compatible", baseUrl: server.baseUrl } },
    });
    if (!ok) {
      use.disabled = false;
    }
  });
  return h(
    "div",
    { class: "choice", dataset: { server: server.name } },
    h("span", { class: "choice-icon" }, icon("zap")),
    h(
      "span",
      { class: "choice-text" },
      h("span", { class: "choice-title", text: server.label }),
      h("span", { class: "choice-sub", text: server.baseUrl }),
    ),
    select,
    use,
    result,
  );
}

function keyChoice(provider) {
  const label = LABELS[provider];
  // A key already found (the environment, the key store) needs only its model chosen.
  const found = state.settings?.providers?.[provider];
  const key = h("input", {
    class: "input",
    type: "password",
    autocomplete: "off",
    "aria-label": `${label} API key`,
    placeholder: found?.hasKey ? "Key found: just Continue" : `${label} API key`,
  });
  const go = h("button", { type: "button", class: "button", text: "Continue" });
  const result = h("div", { class: "choice-result", "aria-live": "polite" });
  const submit = async () => {
    const value = key.value.trim();
    if (!value && !found?.hasKey) {
      result.replaceChildren(icon("info", "small"), `Paste your ${label} API key first.`);
      key.focus();
      return;
    }
    go.disabled = true;
    try {
      if (value) {
        await saveSettings({ keys: { [provider]: value } });
      }
      await chooseModel(provider);
    } catch (error) {
      go.disabled = false;
      result.replaceChildren(icon("circle-alert", "small"), `The key was not saved: ${error.message}`);
    }
  };
  go.addEventListener("click", submit);
  key.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      submit();
    }
  });
  const source = found?.keySource === "env" ? found.keyEnv : `the ${found?.keySource}`;
  return h(
    "div",
    { class: "choice", dataset: { provider } },
    h("span", { class: "choice-icon" }, icon("sparkles")),
    h(
      "span",
      { class: "choice-text" },
      h("span", { class: "choice-title", text: label }),
      h("span", {
        class: "choice-sub",
        text: found?.hasKey
          ? `Suggested model ${SUGGESTED_MODELS[provider]}; the key from ${source} is used.`
          : `Suggested model ${SUGGESTED_MODELS[provider]}; you choose from ${label}'s list next.`,
      }),
    ),
    key,
    go,
    result,
  );
}

function customChoice() {
  const name = h("input", {
    class: "input",
    id: "custom-provider-name",
    "aria-label": "Name",
    placeholder: "Name (e.g. vllm)",
    ".value": "custom",
  });
  const url = h("input", {
    class: "input",
    id: "custom-provider-url",
    type: "url",
    "aria-label": "Base URL",
    placeholder: "http://127.0.0.1:8000/v1",
  });
  const key = h("input", {
    class: "input",
    id: "custom-provider-key",
    type: "password",
    autocomplete: "off",
    "aria-label": "API key (optional)",
    placeholder: "API key (optional)",
  });
  const go = h("button", { type: "button", class: "button", text: "Continue" });
  const result = h("div", { class: "choice-result", "aria-live": "polite" });
  go.addEventListener("click", async () => {
    const provider = name.value.trim();
    const baseUrl = url.value.trim();
    if (!/^[A-Za-z0-9_-]+$/.test(provider)) {
      result.replaceChildren(
        icon("info", "small"),
        "Name it with letters, digits, - or _ (it names the provider in Settings).",
      );
      name.focus();
      return;
    }
    if (!/^https?:\/\//.test(baseUrl)) {
      result.replaceChildren(
        icon("info", "small"),
        "Type the server's OpenAI-compatible address, starting with http:// or https:// and usually ending in /v1.",
      );
      url.focus();
      return;
    }
    go.disabled = true;
    try {
      const secret = key.value.trim();
      await saveSettings({
        providers: { [provider]: { kind: "openai-compatible", baseUrl } },
        ...(secret ? { keys: { [provider]: secret } } : {}),
      });
      await chooseModel(provider);
    } catch (error) {
      go.disabled = false;
      result.replaceChildren(icon("circle-alert", "small"), `Not saved: ${error.message}`);
    }
  });
  return h(
    "div",
    { class: "choice custom-choice", dataset: { provider: "custom" } },
    h("span", { class: "choice-icon" }, icon("plug")),
    h(
      "span",
      { class: "choice-text" },
      h("span", { class: "choice-title", text: "OpenAI-compatible server" }),
      h("span", { class: "choice-sub", text: "Its address (base URL), and a key if it needs one." }),
    ),
    name,
    url,
    key,
    go,
    result,
  );
}

/** Step two: the provider's own models, one to choose (or a name to type), then go. */
export async function chooseModel(provider) {
  step = "model";
  const kind = state.settings?.providers?.[provider]?.kind;
  const label = LABELS[kind] && provider === kind ? LABELS[kind] : provider;
  const status = h("div", { class: "detect-status", "aria-live": "polite" }, icon("loader", "small spin"), `Asking ${label} for its models…`);
  const back = h("button", { type: "button", class: "button", text: "Back" });
  back.addEventListener("click", () => showStart());
  const area = h("div", { class: "choice-list" });
  page(
    h("div", { class: "mark" }),
    h("h2", { text: `Choose a model from ${label}` }),
    h("p", { text: "Foldline tries it with one short request, then opens a new conversation on it. You can change the model of any conversation later from the top bar." }),
    status,
    area,
    h("div", { class: "onboarding-actions" }, back),
  );
  let listed = null;
  try {
    listed = await api.refreshModels(provider);
  } catch (error) {
    listed = null;
    status.replaceChildren(icon("circle-alert", "small"), `${label} could not be asked: ${error.message}.`);
  }
  const own = (listed?.models ?? []).filter((model) => model.provider === provider);
  const providerStatus = listed?.providers?.find((p) => p.name === provider);
  const result = h("div", { class: "choice-result", id: "onboarding-result", "aria-live": "polite" });
  let field;
  if (own.length) {
    status.replaceChildren(icon("check", "small"), `${label} offers ${own.length} model${own.length === 1 ? "" : "s"}.`);
    const suggested = providerStatus?.suggested ?? own[0].id;
    field = h(
      "select",
      { class: "select", id: "onboarding-model", "aria-label": "Model" },
      own.map((model) =>
        h("option", {
          value: model.id,
          text: model.id,
          selected: model.id === suggested,
        }),
      ),
    );
  } else {
    const why = providerStatus?.error
      ? `${label} did not list its models (${providerStatus.error}).`
      : `${label} lists no models.`;
    status.replaceChildren(icon("info", "small"), `${why} Type the model's name as the server spells it; Back to check the address or the key.`);
    field = h("input", {
      class: "input",
      id: "onboarding-model",
      "aria-label": "Model name",
      placeholder: SUGGESTED_MODELS[state.settings?.providers?.[provider]?.kind] ?? "model name",
    });
  }
  const go = h("button", { type: "button", class: "button primary", id: "onboarding-start", text: "Start chatting" });
  go.addEventListener("click", async () => {
    const model = field.value.trim();
    if (!model) {
      result.replaceChildren(icon("info", "small"), "Type the model's name first.");
      field.focus();
      return;
    }
    go.disabled = true;
    back.disabled = true;
    if (!(await connect(provider, model, result))) {
      go.disabled = false;
      back.disabled = false;
    }
  });
  area.replaceChildren(
    h(
      "div",
      { class: "choice", dataset: { provider } },
      h("span", { class: "choice-icon" }, icon("sparkles")),
      h("span", { class: "choice-text" }, h("span", { class: "choice-title", text: "Model" })),
      field,
      go,
      result,
    ),
  );
  field.focus();
}

/**
 * Save the provider (when given), the model as the default served by it, try it with
 * one real call, and open a new conversation on it. False (and a next step) if it failed.
 */
async function connect(provider, model, result, extra = {}) {
  const previous = step;
  step = "busy";
  result.replaceChildren(icon("loader", "small spin"), ` Trying ${model}…`);
  try {
    const configured = state.settings?.models?.[model];
    const models =
      configured?.provider === provider
        ? {}
        : { models: { [model]: { provider } } };
    await saveSettings({ ...extra, ...models });
    const outcome = await api.testConnection({ provider, model });
    if (!outcome.ok) {
      step = previous;
      result.replaceChildren(
        icon("circle-alert", "small"),
        `${model} did not answer: ${outcome.message || outcome.errorCode}. ${nextStep(outcome.errorCode)}`,
      );
      return false;
    }
    await saveSettings({ defaults: { model } });
    forgetModelChoices();
    update({ draftModel: { model, provider } });
    await onDone();
    return true;
  } catch (error) {
    step = previous;
    result.replaceChildren(icon("circle-alert", "small"), `Not set up: ${error.message}`);
    notifyError("Could not set up the model", error);
    return false;
  }
}

function nextStep(code) {
  switch (code) {
    case "auth":
      return "Check the key (Back), then try again.";
    case "not_found":
    case "bad_request":
      return "Choose another model, or check its spelling.";
    case "timeout":
    case "unavailable":
    case "connection":
      return "Check that the server runs and the address is right (Back), then try again.";
    default:
      return "Try another model, or Back to check the provider.";
  }
}
