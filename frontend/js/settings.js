// Settings: providers (keys, base URLs, a connection test), models and their limits, the
// default model, and the compaction settings of config.toml (docs/configuration.md).
//
// The dialog edits a copy of GET /api/settings and saves only what changed (PUT takes a
// partial change): a base URL that comes from the environment is not written into
// config.toml just because the dialog was saved. Keys go in `keys` and are never read
// back; the server shows whether one is set and a mask.

import { api } from "./api.js";
import { confirmDialog, openModal } from "./dialog.js";
import { h, icon } from "./dom.js";
import { mcpPanel } from "./mcp-panel.js";
import { forgetModelChoices } from "./model-choices.js";
import { EMPTY_MODEL, modelsPanel, PRICE_FIELDS } from "./models-panel.js";
import { notifyError } from "./notices.js";
import {
  compactionPanel,
  generalPanel,
  providersPanel,
  suggestedModel,
} from "./settings-panels.js";
import { emit, state, update } from "./state.js";

export async function loadSettings() {
  update({ settings: await api.getSettings() });
  return state.settings;
}

/**
 * True when some provider can answer and a default model is chosen.
 * @param {SettingsOut} settings
 */
export function isConfigured(settings) {
  if (!settings) {
    return false;
  }
  const providers = Object.values(settings.providers);
  const usable = providers.some((p) => p.hasKey || p.kind === "openai-compatible");
  return usable && Boolean(settings.defaults.model);
}

/** Save a partial change; returns the new settings. */
export async function saveSettings(patch) {
  const saved = await api.putSettings(patch);
  forgetModelChoices();
  update({ settings: saved });
  return state.settings;
}
// ---- building the change ------------------------------------------------------------

/**
 * The PUT body: only what differs from what was loaded.
 * @param {SettingsOut} settings
 */
function buildPatch(settings, draft) {
  const patch = {};
  if ((draft.defaults.model || null) !== (settings.defaults?.model || null)) {
    patch.defaults = { model: draft.defaults.model || null };
  }
  const providers = {};
  for (const [name, p] of Object.entries(draft.providers)) {
    const original = settings.providers?.[name];
    if (p === null) {
      if (original) {
        providers[name] = null;
      }
      continue;
    }
    if (!original || p.added) {
      providers[name] = { kind: p.kind, baseUrl: p.baseUrl || null };
    } else if ((p.baseUrl || null) !== (original.baseUrl || null)) {
      providers[name] = { baseUrl: p.baseUrl || null };
    }
  }
  if (Object.keys(providers).length) {
    patch.providers = providers;
  }
  const models = {};
  for (const [name, m] of Object.entries(draft.models)) {
    const original = settings.models?.[name];
    if (m === null) {
      if (original) {
        models[name] = null;
      }
      continue;
    }
    const fields = {
      provider: m.provider || null,
      contextWindow: m.contextWindow ?? null,
      maxOutputTokens: m.maxOutputTokens ?? null,
      inputLimit: m.inputLimit ?? null,
      workingBudget: m.workingBudget ?? null,
      temperature: m.temperature ?? null,
      ...Object.fromEntries(PRICE_FIELDS.map(([key]) => [key, m[key] ?? null])),
    };
    const changed =
      !original || Object.entries(fields).some(([key, value]) => (original[key] ?? null) !== value);
    if (changed) {
      models[name] = fields;
    }
  }
  if (Object.keys(models).length) {
    patch.models = models;
  }
  const compaction = {};
  for (const [key, value] of Object.entries(draft.compaction)) {
    if (value !== undefined && value !== settings.compaction?.[key]) {
      compaction[key] = value;
    }
  }
  if (Object.keys(compaction).length) {
    patch.compaction = compaction;
  }
  const keys = Object.fromEntries(Object.entries(draft.keys).filter(([, key]) => key));
  if (Object.keys(keys).length) {
    patch.keys = keys;
  }
  return patch;
}

function invalidNumbers(draft) {
  const bad = [];
  for (const [name, m] of Object.entries(draft.models)) {
    for (const [key, value] of Object.entries(m ?? {})) {
      if (Number.isNaN(value)) {
        bad.push(`${name}: ${key}`);
      }
    }
  }
  for (const [key, value] of Object.entries(draft.compaction)) {
    if (Number.isNaN(value)) {
      bad.push(`compaction: ${key}`);
    }
  }
  return bad;
}

/** @param {SettingsOut} settings */
/**
 * What the dialog edits: a copy of the settings (an `added` provider or model is new).
 * @param {SettingsOut} settings
 * @returns {{defaults: {model: string},
 *   providers: Record<string, {kind: string, baseUrl: string, added?: boolean}>,
 *   models: Record<string, Partial<ModelSettingsOut> & {added?: boolean}>,
 *   compaction: Partial<CompactionSettingsOut>, keys: Record<string, string>}}
 */
function newDraft(settings) {
  return {
    defaults: { model: settings.defaults.model ?? "" },
    providers: Object.fromEntries(
      Object.entries(settings.providers).map(([name, p]) => [
        name,
        { kind: p.kind, baseUrl: p.baseUrl ?? "" },
      ]),
    ),
    models: Object.fromEntries(
      Object.entries(settings.models).map(([name, m]) => [name, { ...m }]),
    ),
    compaction: { ...settings.compaction },
    keys: {},
  };
}

/** Open the settings dialog, optionally on a given tab. */
export async function openSettings(tab = "general") {
  let settings;
  try {
    settings = await loadSettings();
  } catch (error) {
    notifyError("Could not load the settings", error);
    return;
  }
  let draft = newDraft(settings);
  // The providers' model lists; Settings works without them (they may be offline).
  let available = await api.listModels().catch(() => null);
  const panel = h("div", { class: "settings-panel", id: "settings-panel" });
  const tabs = [
    ["general", "General", "settings"],
    ["providers", "Providers", "plug"],
    ["models", "Models", "gauge"],
    ["compaction", "Compaction", "layers"],
    ["mcp", "Tools (MCP)", "wrench"],
  ];
  const status = h("span", { class: "settings-foot-note", "aria-live": "polite" });

  /** A default model no provider offers (a typo) is questioned before it is saved. */
  async function defaultModelAccepted(patch) {
    const wanted = patch.defaults?.model;
    const known = new Set([
      ...Object.keys(settings.models ?? {}),
      ...(available?.models ?? []).map((model) => model.id),
    ]);
    if (!wanted || !available || known.has(wanted)) {
      return true;
    }
    return confirmDialog({
      title: `Use ${wanted} as the default model?`,
      text: `${wanted} is not offered by any configured provider and has no settings under Models, so new conversations may fail with it. Check the spelling, or save it anyway.`,
      confirmLabel: "Save anyway",
    });
  }

  /**
   * Save what changed. `redraw: false` keeps the open section as it is (Test connection
   * saves first and then shows its result in that section).
   */
  async function save({ quiet = false, redraw = true } = {}) {
    const bad = invalidNumbers(draft);
    if (bad.length) {
      status.textContent = `Not a number: ${bad.join(", ")}`;
      return false;
    }
    const patch = buildPatch(settings, draft);
    if (!Object.keys(patch).length) {
      if (!quiet) {
        status.textContent = "Nothing changed.";
      }
      return true;
    }
    if (!(await defaultModelAccepted(patch))) {
      status.textContent = "Not saved: check the default model.";
      return false;
    }
    try {
      settings = await saveSettings(patch);
      if (patch.models || patch.providers) {
        // The "Offered by your providers" table shows the limits just saved (Adjust).
        available = await api.listModels().catch(() => available);
      }
      if (redraw) {
        draft = newDraft(settings);
        show(current);
      } else {
        // The section's inputs keep writing into this same draft object.
        Object.assign(draft, newDraft(settings));
      }
      status.textContent = "Saved.";
      return true;
    } catch (error) {
      status.textContent = "";
      notifyError("The settings were not saved", error);
      return false;
    }
  }

  const hooks = {
    onTest: async (name, model) => {
      if (!(await save({ quiet: true, redraw: false }))) {
        return { ok: false, message: "Fix the settings first." };
      }
      return api.testConnection(model ? { provider: name, model } : { provider: name });
    },
    onRemove: () => {},
    /** The model Test connection tries when none is typed: the default, else the one
     * suggested for the provider (the same name onboarding and General show). */
    suggestedFor: (name) => settings.defaults.model || suggestedModel(settings, available, name),
    onRefreshModels: async () => {
      if (!(await save({ quiet: true }))) {
        return;
      }
      try {
        available = await api.refreshModels();
        status.textContent = "Model lists refreshed.";
      } catch (error) {
        notifyError("Could not refresh the model lists", error);
      }
      show(current);
    },
    onAdjustModel: (name) => {
      if (!draft.models[name]) {
        draft.models[name] = { ...EMPTY_MODEL, added: true };
      }
      show("models");
    },
  };

  let current = tab;
  const nav = h("nav", { class: "settings-nav", role: "tablist" });
  function show(name) {
    current = name;
    for (const button of nav.children) {
      button.setAttribute("aria-selected", String(button.dataset.tab === name));
    }
    const build = {
      general: () => generalPanel(draft, settings, available),
      providers: () => providersPanel(draft, settings, hooks),
      models: () => modelsPanel(draft, available, hooks),
      compaction: () => compactionPanel(draft),
      mcp: () => mcpPanel(),
    }[name];
    panel.replaceChildren(build());
  }
  for (const [name, label, glyph] of tabs) {
    nav.append(
      h(
        "button",
        { type: "button", role: "tab", dataset: { tab: name }, on: { click: () => show(name) } },
        icon(glyph, "small"),
        label,
      ),
    );
  }
  const saveButton = h("button", {
    type: "button",
    class: "button primary",
    id: "settings-save",
    text: "Save",
  });
  saveButton.addEventListener("click", () => save());
  const closeButton = h("button", { type: "button", class: "button", text: "Close" });
  const dialog = openModal({
    title: "Settings",
    id: "settings-dialog",
    wide: true,
    // Unsaved edits are not thrown away by Esc or Close without a question.
    mayClose: async () =>
      !Object.keys(buildPatch(settings, draft)).length ||
      confirmDialog({
        title: "Discard your changes?",
        text: "Some settings were changed and not saved.",
        confirmLabel: "Discard",
        danger: true,
      }),
    onClose: () => emit("settings-closed"),
    body: h("div", { class: "settings-layout" }, nav, panel),
    foot: h(
      "div",
      { class: "modal-foot" },
      status,
      h("span", { class: "spacer" }),
      closeButton,
      saveButton,
    ),
  });
  closeButton.addEventListener("click", () => dialog.requestClose());
  show(tab);
}
