// The sections of the Settings dialog: general, providers, compaction (models are in
// models-panel.js, MCP servers in mcp-panel.js).
//
// Each builder draws its section from the dialog's draft and writes edits back into it;
// settings.js owns the draft, works out what changed and saves it.

import { h, icon } from "./dom.js";
import { notify } from "./notices.js";
import { SUGGESTED_MODELS as SUGGESTED_MODELS_BY_KIND } from "./onboarding.js";
import { field, numberOrNull } from "./settings-fields.js";
import { currentTheme, setTheme, THEMES } from "./theme.js";

/** Models offered in the pickers when the providers' lists are not at hand. */
const SUGGESTED_MODELS = [
  "claude-sonnet-5-5",
  "claude-opus-5-5",
  "claude-haiku-4-5",
  "gpt-5.4",
  "gpt-5.4-mini",
  "gpt-6.1-sol",
];

const IMPLICIT_PROVIDERS = ["anthropic", "openai"];

const KIND_LABELS = {
  anthropic: "Anthropic",
  openai: "OpenAI",
  "openai-compatible": "OpenAI-compatible",
};

function modelOptions(settings, available, extra = []) {
  const discovered = (available?.models ?? []).map((model) => model.id);
  const fallback = discovered.length ? [] : SUGGESTED_MODELS;
  const names = new Set([
    ...Object.keys(settings.models ?? {}),
    ...extra,
    ...discovered,
    ...fallback,
  ]);
  return [...names].filter(Boolean);
}

/**
 * The one model name suggested everywhere (the default model's placeholder, the
 * connection test): the first usable provider's suggestion from GET /api/models, else
 * the same catalog suggestion onboarding names.
 */
export function suggestedModel(settings, available, provider = null) {
  const statuses = available?.providers ?? [];
  const own = provider ? statuses.find((p) => p.name === provider) : statuses.find((p) => p.suggested);
  if (own?.suggested) {
    return own.suggested;
  }
  const kind = provider ? settings.providers?.[provider]?.kind : "anthropic";
  return SUGGESTED_MODELS_BY_KIND[kind] ?? null;
}

function datalist(id, names) {
  return h(
    "datalist",
    { id },
    names.map((name) => h("option", { value: name })),
  );
}

// ---- the sections ---------------------------------------------------------------------

export function generalPanel(draft, settings, available) {
  const input = h("input", {
    class: "input",
    id: "settings-default-model",
    list: "settings-model-names",
    ".value": draft.defaults.model ?? "",
    placeholder: suggestedModel(settings, available),
  });
  const theme = h(
    "select",
    { class: "select", id: "settings-theme" },
    THEMES.map(([value, label]) =>
      h("option", { value, text: label, selected: value === currentTheme() }),
    ),
  );
  // A choice of this browser, applied at once (not part of config.toml).
  theme.addEventListener("change", () => setTheme(theme.value));
  input.addEventListener("input", () => {
    draft.defaults.model = input.value.trim();
  });
  const storage = settings.keyStorage;
  return h(
    "div",
    {},
    h("h3", { text: "General" }),
    h("p", {
      class: "panel-help",
      text: "The model new conversations use. Each conversation can keep its own.",
    }),
    field(
      "Default model",
      input,
      "A model name as the provider spells it; the providers' lists and the catalog know the limits of their models, set others under Models.",
    ),
    datalist("settings-model-names", modelOptions(settings, available)),
    field("Theme", theme, "Light, dark, or as the system is set; kept by this browser."),
    storage?.warning
      ? h("div", { class: "inline-error" }, icon("triangle-alert", "small"), storage.warning)
      : h("p", {
          class: "settings-foot-note",
          text: storage?.backend === "keyring" ? "API keys are kept in the system keyring." : "",
        }),
    settings.dataDir
      ? h("p", { class: "settings-foot-note", text: `Data directory: ${settings.dataDir}` })
      : null,
  );
}

/** @param {ProviderSettingsOut} provider */
function providerCard(name, provider, draft, { onTest, onRemove, suggestedFor }) {
  const suggestion = suggestedFor?.(name) ?? null;
  const baseUrl = h("input", {
    class: "input",
    ".value": provider.baseUrl ?? "",
    placeholder: provider.kind === "openai-compatible" ? "http://127.0.0.1:11434/v1" : "default",
    dataset: { field: "baseUrl" },
  });
  baseUrl.addEventListener("input", () => {
    draft.providers[name].baseUrl = baseUrl.value.trim();
  });
  const key = h("input", {
    class: "input",
    type: "password",
    autocomplete: "off",
    placeholder: provider.hasKey
      ? `${provider.maskedKey ?? "set"} (leave empty to keep)`
      : "not set",
    dataset: { field: "key" },
  });
  key.addEventListener("input", () => {
    draft.keys[name] = key.value.trim();
  });
  const keyState = provider.hasKey
    ? `Key set (${provider.maskedKey ?? "…"}) from ${provider.keySource ?? "the key store"}.`
    : provider.kind === "openai-compatible"
      ? "No key: most local servers need none."
      : provider.keyEnv
        ? `No key. You can also set ${provider.keyEnv}.`
        : "No key.";
  const keyField = field("API key", key, keyState);
  const result = h("span", { class: "test-result" });
  const testModel = h("input", {
    class: "input",
    list: "settings-model-names",
    placeholder: suggestion ? `model to try (${suggestion} if empty)` : "a model it serves",
    dataset: { field: "testModel" },
  });
  const testButton = h(
    "button",
    { type: "button", class: "button test-connection" },
    icon("plug", "small"),
    "Test connection",
  );
  testButton.addEventListener("click", async () => {
    testButton.disabled = true;
    result.className = "test-result";
    result.replaceChildren(icon("loader", "small spin"), " Trying…");
    try {
      const outcome = await onTest(name, testModel.value.trim() || suggestion || "");
      if (outcome.ok) {
        // It answered: whatever the key state said, the provider works.
        const badge = testButton.closest(".provider-card")?.querySelector(".card-head .badge");
        if (badge) {
          badge.className = "badge accent";
          badge.textContent = "connected";
        }
        // The key line says what the test used, never "No key" beside "Connected".
        const keyHelp = keyField.querySelector(".field-help");
        if (keyHelp && (key.value.trim() || !provider.hasKey)) {
          keyHelp.textContent = key.value.trim()
            ? "Key saved; this test used it."
            : "No key needed: the server answered without one.";
        }
        result.className = "test-result inline-ok";
        result.replaceChildren(
          icon("check", "small"),
          ` Connected to ${outcome.model}${outcome.latencyMs ? ` in ${outcome.latencyMs} ms` : ""}.`,
        );
      } else {
        result.className = "test-result inline-error";
        result.replaceChildren(
          icon("circle-alert", "small"),
          outcome.message || outcome.errorCode || "The test failed.",
        );
      }
    } catch (error) {
      result.className = "test-result inline-error";
      result.replaceChildren(icon("circle-alert", "small"), error.message);
    } finally {
      testButton.disabled = false;
    }
  });
  const implicit = IMPLICIT_PROVIDERS.includes(name);
  return h(
    "div",
    { class: "card provider-card", dataset: { provider: name } },
    h(
      "div",
      { class: "card-head" },
      h(
        "span",
        { class: "card-title" },
        name,
        h("small", { text: KIND_LABELS[provider.kind] ?? provider.kind }),
      ),
      provider.hasKey || provider.kind === "openai-compatible"
        ? h("span", { class: "badge accent", text: "ready" })
        : h("span", { class: "badge", text: "no key" }),
      implicit
        ? null
        : h(
            "button",
            {
              type: "button",
              class: "icon-button",
              title: `Remove ${name}`,
              "aria-label": `Remove ${name}`,
              on: { click: () => onRemove(name) },
            },
            icon("trash-2", "small"),
          ),
    ),
    h(
      "div",
      { class: "field-row" },
      field("Base URL", baseUrl, provider.baseUrlSource === "env" ? "From the environment." : null),
      keyField,
    ),
    h(
      "div",
      { class: "field-row" },
      field("Try with model", testModel),
      h("div", { class: "card-actions" }, testButton),
    ),
    result,
  );
}

export function providersPanel(draft, settings, hooks) {
  const list = h("div", {});
  const redraw = () => {
    list.replaceChildren(
      ...Object.entries(draft.providers)
        .filter(([, p]) => p !== null)
        .map(([name, p]) =>
          providerCard(name, { ...(settings.providers[name] ?? {}), ...p }, draft, hooks),
        ),
    );
  };
  hooks.onRemove = (name) => {
    draft.providers[name] = null;
    redraw();
  };
  redraw();
  const newName = h("input", { class: "input", placeholder: "local", id: "new-provider-name" });
  const newUrl = h("input", {
    class: "input",
    placeholder: "http://127.0.0.1:11434/v1",
    id: "new-provider-url",
  });
  const add = h(
    "button",
    { type: "button", class: "button", id: "add-provider" },
    icon("plus", "small"),
    "Add",
  );
  add.addEventListener("click", () => {
    const name = newName.value.trim();
    const url = newUrl.value.trim();
    if (!/^[A-Za-z0-9_-]+$/.test(name) || !url) {
      notify({
        kind: "warn",
        title: "Name and base URL needed",
        text: "Use letters, digits, - or _ for the name.",
      });
      return;
    }
    draft.providers[name] = { kind: "openai-compatible", baseUrl: url, added: true };
    newName.value = "";
    newUrl.value = "";
    redraw();
  });
  return h(
    "div",
    {},
    h("h3", { text: "Providers" }),
    h("p", {
      class: "panel-help",
      text: "Anthropic and OpenAI by key; Ollama, LM Studio, llama.cpp and vLLM as OpenAI-compatible servers by base URL. The test uses the saved settings, so pending changes are saved first.",
    }),
    list,
    h(
      "div",
      { class: "card" },
      h(
        "div",
        { class: "card-head" },
        h("span", { class: "card-title", text: "Add an OpenAI-compatible server" }),
      ),
      h("div", { class: "field-row" }, field("Name", newName), field("Base URL", newUrl)),
      add,
    ),
  );
}
export function compactionPanel(draft) {
  const c = draft.compaction;
  const check = (key, label) => {
    const input = h("input", {
      type: "checkbox",
      ".checked": Boolean(c[key]),
      dataset: { field: key },
    });
    input.addEventListener("change", () => {
      c[key] = input.checked;
    });
    return h("label", { class: "check" }, input, h("span", { text: label }));
  };
  const percent = (key) => {
    const input = h("input", {
      class: "input",
      inputmode: "numeric",
      ".value": c[key] !== undefined && c[key] !== null ? String(Math.round(c[key] * 100)) : "",
      dataset: { field: key },
    });
    input.addEventListener("input", () => {
      const value = numberOrNull(input.value);
      c[key] = value === null ? undefined : value / 100;
    });
    return input;
  };
  const integer = (key) => {
    const input = h("input", {
      class: "input",
      inputmode: "numeric",
      ".value": c[key] ?? "",
      dataset: { field: key },
    });
    input.addEventListener("input", () => {
      c[key] = numberOrNull(input.value) ?? undefined;
    });
    return input;
  };
  const strategy = h(
    "select",
    { class: "select", dataset: { field: "strategy" } },
    h("option", {
      value: "structured",
      text: "Structured (fixed sections)",
      selected: c.strategy === "structured",
    }),
    h("option", { value: "narrative", text: "Narrative", selected: c.strategy === "narrative" }),
  );
  strategy.addEventListener("change", () => {
    c.strategy = strategy.value;
  });
  const summarizer = h("input", {
    class: "input",
    list: "settings-model-names",
    ".value": c.model ?? "",
    placeholder: "the conversation's model",
    dataset: { field: "model" },
  });
  summarizer.addEventListener("input", () => {
    c.model = summarizer.value.trim();
  });
  const recall = h(
    "select",
    { class: "select", dataset: { field: "recallConversations" } },
    ...[
      ["project", "The same project's conversations"],
      ["all", "All my conversations"],
      ["off", "None (only the conversation itself)"],
    ].map(([value, text]) =>
      h("option", { value, text, selected: (c.recallConversations ?? "project") === value }),
    ),
  );
  recall.addEventListener("change", () => {
    c.recallConversations = recall.value;
  });
  return h(
    "div",
    {},
    h("h3", { text: "Compaction" }),
    h("p", {
      class: "panel-help",
      text: "When and how older messages fold into a summary. The full history is always kept.",
    }),
    check("auto", "Fold automatically when the context crosses the threshold"),
    check("prune", "Prune old tool outputs before folding (they stay in the history)"),
    check(
      "autoTitle",
      "Title new conversations with a few words by the summarizer after the first answer",
    ),
    h(
      "div",
      { class: "field-row" },
      field("Fold at (% of input budget)", percent("threshold"), "Between turns."),
      field("Hard threshold (%)", percent("hardThreshold"), "Folds even mid tool-loop."),
    ),
    h(
      "div",
      { class: "field-row" },
      field(
        "Prepare at (%)",
        percent("prepareThreshold"),
        "From here the next fold's summary is written in the background.",
      ),
    ),
    h(
      "div",
      { class: "field-row" },
      field("Fold down to (%)", percent("target"), "So it does not fold again next turn."),
      field("Keep recent tokens", integer("keepRecentTokens"), "Kept verbatim after a fold."),
    ),
    h(
      "div",
      { class: "field-row" },
      field(
        "Your words after a fold (%)",
        percent("personWordsShare"),
        "What you wrote stays word for word after the summary; beyond this share of the input budget the oldest are shortened.",
      ),
    ),
    h(
      "div",
      { class: "field-row" },
      field("Summary style", strategy),
      field(
        "Tool output cap (tokens)",
        integer("toolResultTokenCap"),
        "Longer outputs are truncated at ingest.",
      ),
    ),
    field(
      "Summarizer model (optional)",
      summarizer,
      "A cheaper model for summaries; empty uses the conversation's model.",
    ),
    field(
      "The model may look back into",
      recall,
      "After a fold the model can search this conversation's folded messages. This also lets it search and read your other conversations (their text, tool outputs and files' text); a conversation in a project only ever sees that project's.",
    ),
  );
}
