// The sections of the Settings dialog: general, providers, models, compaction.
//
// Each builder draws its section from the dialog's draft and writes edits back into it;
// settings.js owns the draft, works out what changed and saves it.

import { h, icon } from "./dom.js";
import { notify } from "./notices.js";

/** Models offered in the pickers when the providers' lists are not at hand. */
const SUGGESTED_MODELS = [
  "claude-sonnet-5-5",
  "claude-opus-5-5",
  "claude-haiku-4-5",
  "gpt-5.4",
  "gpt-5.4-mini",
  "gpt-6.1-sol",
];

/** A new `[models."name"]` entry: every limit left to the provider and the catalog. */
export const EMPTY_MODEL = {
  provider: null,
  contextWindow: null,
  maxOutputTokens: null,
  inputLimit: null,
  workingBudget: null,
};

const WORKING_BUDGET_HELP =
  "Where it folds instead of the full window. Every turn sends the whole context, so a 1M-token window filled to 80% costs dollars per turn even at cache prices, and models answer worse on very long inputs. Set it to the window to use all of it.";

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

function datalist(id, names) {
  return h(
    "datalist",
    { id },
    names.map((name) => h("option", { value: name })),
  );
}

function field(label, control, help) {
  return h(
    "label",
    { class: "field" },
    h("span", { class: "field-label", text: label }),
    control,
    help ? h("span", { class: "field-help", text: help }) : null,
  );
}

function numberOrNull(text) {
  const trimmed = String(text ?? "").trim();
  if (trimmed === "") {
    return null;
  }
  const value = Number(trimmed);
  return Number.isFinite(value) ? value : Number.NaN;
}
// ---- the sections ---------------------------------------------------------------------

export function generalPanel(draft, settings, available) {
  const input = h("input", {
    class: "input",
    id: "settings-default-model",
    list: "settings-model-names",
    ".value": draft.defaults.model ?? "",
    placeholder: "claude-sonnet-5",
  });
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
function providerCard(name, provider, draft, { onTest, onRemove }) {
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
    : provider.keyEnv
      ? `No key. You can also set ${provider.keyEnv}.`
      : "No key.";
  const result = h("span", { class: "test-result" });
  const testModel = h("input", {
    class: "input",
    list: "settings-model-names",
    placeholder: "model to try (default model if empty)",
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
      const outcome = await onTest(name, testModel.value.trim());
      if (outcome.ok) {
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
      field("API key", key, keyState),
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

/** @param {ModelSettingsOut} model */
function modelRow(name, model, draft, providerNames, redraw, known) {
  const shown = (value, fallback) => (value ? String(value) : fallback);
  const provider = h(
    "select",
    { class: "select", dataset: { field: "provider" } },
    h("option", { value: "", text: "(by name)" }),
    providerNames.map((p) => h("option", { value: p, text: p, selected: model.provider === p })),
  );
  provider.addEventListener("change", () => {
    draft.models[name].provider = provider.value || null;
  });
  const numberInput = (key, placeholder) => {
    const input = h("input", {
      class: "input",
      inputmode: "numeric",
      placeholder,
      ".value": model[key] ?? "",
      dataset: { field: key },
    });
    input.addEventListener("input", () => {
      draft.models[name][key] = numberOrNull(input.value);
    });
    return input;
  };
  return h(
    "div",
    { class: "card model-card", dataset: { model: name } },
    h(
      "div",
      { class: "card-head" },
      h("span", { class: "card-title", text: name }),
      h(
        "button",
        {
          type: "button",
          class: "icon-button",
          title: `Remove ${name}`,
          "aria-label": `Remove ${name}`,
          on: {
            click: () => {
              draft.models[name] = null;
              redraw();
            },
          },
        },
        icon("trash-2", "small"),
      ),
    ),
    h(
      "div",
      { class: "field-row four" },
      field("Provider", provider),
      field(
        "Context window",
        numberInput("contextWindow", shown(known?.contextWindow, "32768")),
        "0 = unlimited",
      ),
      field("Max output", numberInput("maxOutputTokens", shown(known?.maxOutputTokens, "4096"))),
      field("Input limit", numberInput("inputLimit", "optional")),
    ),
    h(
      "div",
      { class: "field-row" },
      field(
        "Working budget",
        numberInput(
          "workingBudget",
          known?.workingBudgetSource === "default" ? String(known.workingBudget) : "the whole window",
        ),
        WORKING_BUDGET_HELP,
      ),
    ),
  );
}

function formatCount(value) {
  if (!value) {
    return "—";
  }
  return value >= 1_000_000
    ? `${Number((value / 1_000_000).toFixed(2))}M`
    : value >= 1000
      ? `${Math.round(value / 1000)}k`
      : String(value);
}

/** The models the providers offer, each provider's status, and a refresh button. */
function availableSection(available, hooks) {
  const refresh = h(
    "button",
    { type: "button", class: "button", id: "refresh-models" },
    icon("rotate-ccw", "small"),
    "Refresh lists",
  );
  refresh.addEventListener("click", async () => {
    refresh.disabled = true;
    try {
      await hooks.onRefreshModels();
    } finally {
      refresh.disabled = false;
    }
  });
  if (!available) {
    return h(
      "div",
      { class: "card", id: "available-models" },
      h("p", { class: "settings-foot-note", text: "The model lists could not be loaded." }),
      refresh,
    );
  }
  const notes = available.providers
    .filter((provider) => provider.message)
    .map((provider) =>
      h(
        "div",
        { class: "inline-error stale-models", dataset: { provider: provider.name } },
        icon("triangle-alert", "small"),
        provider.message,
      ),
    );
  const rows = available.models.map((model) =>
    h(
      "tr",
      { dataset: { model: model.id } },
      h("td", {}, model.displayName && model.displayName !== model.id ? model.displayName : model.id),
      h("td", { text: model.provider }),
      h("td", { class: "num", text: formatCount(model.contextWindow) }),
      h("td", { class: "num", text: formatCount(model.maxOutputTokens) }),
      h("td", { class: "num", text: model.workingBudget ? formatCount(model.workingBudget) : "window" }),
      h(
        "td",
        {},
        model.lifecycle === "deprecated" ? h("span", { class: "badge warn", text: "deprecated" }) : null,
        model.known ? null : h("span", { class: "badge warn", text: "unknown window" }),
      ),
      h(
        "td",
        {},
        h("button", {
          type: "button",
          class: "link-button",
          text: "Adjust",
          on: { click: () => hooks.onAdjustModel(model.id) },
        }),
      ),
    ),
  );
  return h(
    "div",
    { class: "card", id: "available-models" },
    h(
      "div",
      { class: "card-head" },
      h("span", { class: "card-title", text: "Offered by your providers" }),
      refresh,
    ),
    ...notes,
    rows.length
      ? h(
          "div",
          { class: "models-table-wrap" },
          h(
          "table",
          { class: "models-table" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ["Model", "Provider", "Window", "Output", "Folds at", "", ""].map((label) =>
                h("th", { text: label }),
              ),
            ),
          ),
          h("tbody", {}, rows),
          ),
        )
      : h("p", { class: "settings-foot-note", text: "Add a key under Providers to see models." }),
    h("p", {
      class: "settings-foot-note",
      text: `Lists come from the providers (refreshed daily); retired models are not offered. Built-in catalog of ${available.catalogDate}.`,
    }),
  );
}

export function modelsPanel(draft, available, hooks) {
  // What the provider or the catalog says, shown where the person would override it.
  const known = Object.fromEntries((available?.models ?? []).map((model) => [model.id, model]));
  const list = h("div", {});
  const redraw = () => {
    const providerNames = Object.entries(draft.providers)
      .filter(([, p]) => p !== null)
      .map(([name]) => name);
    const rows = Object.entries(draft.models)
      .filter(([, m]) => m !== null)
      .map(([name, m]) =>
        modelRow(name, m, draft, providerNames, redraw, known[name]),
      );
    list.replaceChildren(
      ...(rows.length
        ? rows
        : [
            h("p", {
              class: "settings-foot-note",
              text: "No model limits set: the built-in catalog and the servers supply them.",
            }),
          ]),
    );
  };
  redraw();
  const newName = h("input", { class: "input", placeholder: "llama3.1:8b", id: "new-model-name" });
  const add = h(
    "button",
    { type: "button", class: "button", id: "add-model" },
    icon("plus", "small"),
    "Add model",
  );
  add.addEventListener("click", () => {
    const name = newName.value.trim();
    if (!name) {
      return;
    }
    draft.models[name] = { ...EMPTY_MODEL, added: true };
    newName.value = "";
    redraw();
  });
  return h(
    "div",
    {},
    h("h3", { text: "Models and limits" }),
    availableSection(available, hooks),
    h("p", {
      class: "panel-help",
      text: "Limits for models neither the provider nor the catalog knows, or overrides. An unknown window gets a conservative default and the meter says so.",
    }),
    list,
    h(
      "div",
      { class: "field-row" },
      field("Model name", newName),
      h("div", { class: "card-actions" }, add),
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
  );
}
