// The models a person can choose from, one entry per provider and model id: the
// providers' own lists (GET /api/models) and the models configured in Settings. A model id
// two providers offer (an OpenAI-compatible proxy listing Claude's ids beside Anthropic)
// is two entries, each with its own provider's window and price, and a conversation
// stores which provider serves its model.

import { api } from "./api.js";
import { formatTokens } from "./format.js";
import { projectOf } from "./projects.js";
import { state } from "./state.js";

const KIND_LABELS = { anthropic: "Anthropic", openai: "OpenAI" };

/** The last list read, so the top bar can name a model's window without asking again. */
let cached = null;

/**
 * @typedef {object} ModelChoice
 * @property {string} id
 * @property {string} provider
 * @property {string} providerLabel
 * @property {number} contextWindow
 * @property {boolean} known
 * @property {ModelPricesOut|null} prices
 * @property {string|null} lifecycle
 */

/** A stable key for one entry: the provider and the id. */
export function choiceKey(provider, id) {
  return `${provider}\n${id}`;
}

/** Every choice, grouped by provider in the configured order. @returns {Promise<Map<string, ModelChoice[]>>} */
export async function loadModelChoices({ refresh = false } = {}) {
  if (cached && !refresh) {
    return cached;
  }
  let listed = null;
  try {
    listed = await api.listModels();
  } catch {
    // Configured models alone are still something to choose from.
  }
  const groups = new Map();
  const add = (choice) => {
    if (!groups.has(choice.provider)) {
      groups.set(choice.provider, []);
    }
    const list = groups.get(choice.provider);
    if (!list.some((other) => other.id === choice.id)) {
      list.push(choice);
    }
  };
  const kinds = new Map((listed?.providers ?? []).map((p) => [p.name, p.kind]));
  for (const model of listed?.models ?? []) {
    add({
      id: model.id,
      provider: model.provider,
      providerLabel: providerLabel(model.provider, model.providerKind),
      contextWindow: model.contextWindow,
      known: model.known,
      prices: model.prices ?? null,
      lifecycle: model.lifecycle ?? null,
    });
  }
  for (const [id, model] of Object.entries(state.settings?.models ?? {})) {
    if (model.provider && ![...groups.values()].flat().some((c) => c.id === id)) {
      add({
        id,
        provider: model.provider,
        providerLabel: providerLabel(model.provider, kinds.get(model.provider)),
        contextWindow: model.contextWindow ?? 0,
        known: Boolean(model.contextWindow),
        prices: null,
        lifecycle: null,
      });
    }
  }
  cached = groups;
  return groups;
}

/** Forget the list (settings saved, a provider added). */
export function forgetModelChoices() {
  cached = null;
}

function providerLabel(name, kind) {
  const label = KIND_LABELS[kind];
  return label && label.toLowerCase() !== name.toLowerCase() ? `${name} (${label})` : (label ?? name);
}

/** "200k window · $3 / $15 per M" (what is known). @param {ModelChoice} choice */
export function describeChoice(choice) {
  const parts = [];
  parts.push(
    choice.contextWindow
      ? `${formatTokens(choice.contextWindow)} window${choice.known ? "" : " (guessed)"}`
      : "window unknown",
  );
  if (choice.prices) {
    parts.push(`$${price(choice.prices.input)} in / $${price(choice.prices.output)} out per M`);
  }
  if (choice.lifecycle === "deprecated") {
    parts.push("deprecated");
  }
  return parts.join(" · ");
}

function price(value) {
  return Number(value.toFixed(2)).toString();
}

/**
 * The model and provider a conversation (or the draft) uses: its own, else its project's
 * default, else the app's default. `provider` is null when the configuration picks it.
 */
export function currentChoice() {
  const conversation = state.conversation;
  if (conversation) {
    if (conversation.model) {
      return { model: conversation.model, provider: conversation.provider ?? null };
    }
    const projectModel = projectOf(conversation.projectId)?.model;
    return { model: projectModel ?? state.settings?.defaults?.model ?? "", provider: null };
  }
  if (state.draftModel) {
    return state.draftModel;
  }
  const projectModel = state.draftProjectId ? projectOf(state.draftProjectId)?.model : null;
  return { model: projectModel ?? state.settings?.defaults?.model ?? "", provider: null };
}

/**
 * The entry a choice stands for: its provider's, else the one `[models."id"] provider`
 * names, else the first provider that lists the id.
 * @param {Map<string, ModelChoice[]>} groups
 * @param {{model: string, provider?: string|null}} choice
 * @returns {ModelChoice|null}
 */
export function findChoice(groups, { model, provider }) {
  if (!model) {
    return null;
  }
  // No provider of its own: the one the configuration names for the model.
  provider = provider ?? state.settings?.models?.[model]?.provider ?? null;
  if (provider && groups.get(provider)) {
    const own = groups.get(provider).find((choice) => choice.id === model);
    if (own) {
      return own;
    }
  }
  for (const list of groups.values()) {
    const found = list.find((choice) => choice.id === model);
    if (found) {
      return found;
    }
  }
  return null;
}
