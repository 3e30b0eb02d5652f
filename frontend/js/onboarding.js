// Onboarding: shown when no provider can answer yet. Finds a local Ollama or LM Studio,
// or takes an Anthropic / OpenAI key, then gets out of the way.

import { api } from "./api.js";
import { byId, h, icon } from "./dom.js";
import { notifyError } from "./notices.js";
import { saveSettings } from "./settings.js";
import { state } from "./state.js";

let onDone = async () => {};

export function showOnboarding({ done, openSettings }) {
  onDone = done;
  const root = byId("onboarding");
  const detected = h("div", { class: "choice-list", id: "local-servers" });
  const detectStatus = h("div", { class: "detect-status" });
  const again = h("button", { type: "button", class: "link-button", text: "Detect again" });
  again.addEventListener("click", () => detect(detected, detectStatus));
  root.replaceChildren(
    h(
      "div",
      { class: "onboarding-inner" },
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
      h(
        "div",
        { class: "choice-list" },
        keyChoice("anthropic", "Anthropic", "claude-sonnet-5-5"),
        keyChoice("openai", "OpenAI", "gpt-6.2-sol"),
      ),
      h(
        "p",
        { class: "settings-foot-note" },
        "Other servers (llama.cpp, vLLM) and model limits: ",
        h("button", {
          type: "button",
          class: "link-button",
          text: "open Settings",
          on: { click: () => openSettings("providers") },
        }),
      ),
    ),
  );
  root.hidden = false;
  detect(detected, detectStatus);
}

export function hideOnboarding() {
  byId("onboarding").hidden = true;
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
    status.replaceChildren(icon("circle-alert", "small"), `Detection failed: ${error.message}`);
    return;
  }
  const found = servers.filter((server) => server.available);
  if (!found.length) {
    status.replaceChildren(
      icon("info", "small"),
      "No local Ollama or LM Studio answered. Start one, then detect again.",
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
    { class: "select" },
    server.models.length
      ? server.models.map((model) => h("option", { value: model, text: model }))
      : h("option", { value: "", text: "no models pulled yet" }),
  );
  const use = h("button", { type: "button", class: "button primary", text: `Use ${server.label}` });
  use.addEventListener("click", async () => {
    if (!select.value) {
      return;
    }
    use.disabled = true;
    try {
      await saveSettings({
        providers: { [server.name]: { kind: "openai-compatible", baseUrl: server.baseUrl } },
        models: { [select.value]: { provider: server.name } },
        defaults: { model: select.value },
      });
      await onDone();
    } catch (error) {
      use.disabled = false;
      notifyError(`Could not set up ${server.label}`, error);
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
  );
}

function keyChoice(provider, label, model) {
  // A key already found (the environment, the key store) only needs a model chosen.
  const found = state.settings?.providers?.[provider];
  const key = h("input", {
    class: "input",
    type: "password",
    autocomplete: "off",
    placeholder: found?.hasKey ? "Key found: just Save" : `${label} API key`,
  });
  const use = h("button", { type: "button", class: "button", text: "Save" });
  use.addEventListener("click", async () => {
    const value = key.value.trim();
    if (!value && !found?.hasKey) {
      key.focus();
      return;
    }
    use.disabled = true;
    try {
      const keys = value ? { keys: { [provider]: value } } : {};
      await saveSettings({ ...keys, defaults: { model } });
      await onDone();
    } catch (error) {
      use.disabled = false;
      notifyError(`Could not save the ${label} key`, error);
    }
  });
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
          ? `Default model ${model}; the key from ${found.keySource === "env" ? found.keyEnv : `the ${found.keySource}`} is used.`
          : `Default model ${model}; change it in Settings.`,
      }),
    ),
    key,
    use,
  );
}
