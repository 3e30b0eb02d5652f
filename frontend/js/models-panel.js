// The Models section of Settings: what the providers offer (with each list's status and
// a refresh), and the `[models."name"]` limits the person sets or overrides.
//
// Like the other sections it draws from the dialog's draft and writes edits back into
// it; settings.js owns the draft and saves it.

import { h, icon } from "./dom.js";
import { field, numberOrNull } from "./settings-fields.js";

/** A new `[models."name"]` entry: every limit left to the provider and the catalog. */
export const EMPTY_MODEL = {
  provider: null,
  contextWindow: null,
  maxOutputTokens: null,
  inputLimit: null,
  workingBudget: null,
  temperature: null,
  inputPrice: null,
  outputPrice: null,
  cacheReadPrice: null,
  cacheWritePrice: null,
};

/** The price fields of a model card: US dollars per million tokens. */
export const PRICE_FIELDS = [
  ["inputPrice", "Input $/M"],
  ["outputPrice", "Output $/M"],
  ["cacheReadPrice", "Cache read $/M"],
  ["cacheWritePrice", "Cache write $/M"],
];

const WORKING_BUDGET_HELP =
  "Where it folds instead of the full window. Every turn sends the whole context, so a 1M-token window filled to 80% costs dollars per turn even at cache prices, and models answer worse on very long inputs. Set it to the window to use all of it.";

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
  const numberInput = (key, placeholder, inputmode = "numeric") => {
    const input = h("input", {
      class: "input",
      inputmode,
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
      field(
        "Temperature",
        numberInput("temperature", "provider's default", "decimal"),
        "0 to 2; lower is more deterministic. A conversation may set its own.",
      ),
    ),
    h(
      "div",
      { class: "field-row four model-prices" },
      PRICE_FIELDS.map(([key, label]) =>
        field(label, numberInput(key, "catalog", "decimal")),
      ),
    ),
    h("p", {
      class: "settings-foot-note",
      text: "Prices in US dollars per million tokens; left empty, the catalog's price is used (none for unknown models: the meter then counts tokens only).",
    }),
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
      h("td", { text: model.provider, dataset: { label: "Provider" } }),
      h("td", { class: "num", text: formatCount(model.contextWindow), dataset: { label: "Window" } }),
      h("td", { class: "num", text: formatCount(model.maxOutputTokens), dataset: { label: "Output" } }),
      h("td", {
        class: "num",
        text: model.workingBudget ? formatCount(model.workingBudget) : "window",
        dataset: { label: "Folds at" },
      }),
      h(
        "td",
        {},
        model.lifecycle === "deprecated" ? h("span", { class: "badge warn", text: "deprecated" }) : null,
        model.known ? null : h("span", { class: "badge warn", text: "unknown window" }),
        model.windowSource ? h("span", { class: "badge", title: "Where the server stated its window", text: `from ${model.windowSource}` }) : null,
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
              ["Model", "Provider", "Window", "Output", "Folds at"].map((label) =>
                h("th", { text: label }),
              ),
              // Headers a screen reader names; the columns speak for themselves on screen.
              h("th", {}, h("span", { class: "visually-hidden", text: "Notes" })),
              h("th", {}, h("span", { class: "visually-hidden", text: "Actions" })),
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
