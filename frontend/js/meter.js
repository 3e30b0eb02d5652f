// The context meter: how full the model's view is, against the input budget.
//
// The bar turns amber in the last stretch before the automatic fold and red at the fold
// threshold; hovering shows the breakdown (system, tools, summary, messages). Shortly
// before the automatic fold a warning appears above the composer, so a fold is never a
// surprise. Numbers come from GET /context and, while a turn runs, `context.stats` events.

import { app } from "./app.js";
import { byId, h, icon } from "./dom.js";
import { formatInteger, formatPercent, formatTokens } from "./format.js";
import { on, state, update } from "./state.js";

/** How far below the fold threshold the warning starts (a fraction of the budget) while
 * no turn has been measured yet. Once one has, the margin is two turns' growth, so
 * "likely within a turn or two" is what the warning says and what happens. */
const WARNING_MARGIN = 0.1;

/** Growth of the last turn as a fraction of the budget, learned from the meter itself. */
let lastTurnGrowth = 0;
let turnStart = null;

const PARTS = [
  ["system", "System prompt"],
  ["project", "Project (instructions, files, notes)"],
  ["tools", "Tool schemas"],
  ["summary", "Summary"],
  ["messages", "Messages"],
];

/** While a fold is being prepared in the background (no turn running), the meter asks
 * for fresh numbers this often, to show "ready" and a re-summary that landed. */
const BACKGROUND_POLL_MS = 2000;
let pollTimer = null;

export function initMeter() {
  on("context", render);
  on("settings", render);
  on("busy", (busy) => {
    learnTurnGrowth(busy);
    render();
  });
  on("conversation", () => {
    lastTurnGrowth = 0;
    turnStart = null;
  });
}

function learnTurnGrowth(busy) {
  const context = state.context;
  if (busy === "turn") {
    // Only at the start: a fold inside the turn announces "turn" again.
    if (!turnStart && context) {
      turnStart = { tokens: context.tokens, version: context.version };
    }
    return;
  }
  if (busy === null && turnStart && context?.inputBudget) {
    // A turn that folded says nothing about how fast the view grows.
    if (context.version === turnStart.version && context.tokens > turnStart.tokens) {
      lastTurnGrowth = (context.tokens - turnStart.tokens) / context.inputBudget;
    }
    turnStart = null;
  }
}

/**
 * Merge new numbers (a `context.stats` event or a /context body) and redraw.
 * @param {ContextStatsOut|ContextOut} numbers
 */
export function updateContext(numbers) {
  if (!numbers) {
    return;
  }
  // Only the numbers are kept: the view's messages (in the model view's /context body)
  // can be megabytes and nothing reads them from here.
  const kept = /** @type {Partial<ContextOut>} */ ({ ...numbers });
  delete kept.apiMessages;
  delete kept.apiMessagesIncluded;
  const before = state.context;
  update({ context: /** @type {ContextOut} */ ({ ...(before ?? {}), ...kept }) });
  // A fold that landed outside a turn (a background re-summary): redraw the fold lines.
  if (before && !state.busy && before.version !== undefined && kept.version !== undefined) {
    if (before.version !== kept.version) {
      app.foldsChanged();
    }
  }
  schedulePoll();
}

function schedulePoll() {
  clearTimeout(pollTimer);
  pollTimer = null;
  if (state.context?.backgroundFold?.status === "preparing" && state.currentId) {
    pollTimer = setTimeout(() => {
      pollTimer = null;
      if (!state.busy) {
        app.refreshContext();
      } else {
        schedulePoll();
      }
    }, BACKGROUND_POLL_MS);
  }
}

/** Dollars, with enough digits to see a cent's fraction of a turn. */
function formatUsd(value) {
  if (value === null || value === undefined) {
    return "—";
  }
  const digits = Math.abs(value) < 0.01 ? 4 : Math.abs(value) < 10 ? 3 : 2;
  return `$${value.toFixed(digits)}`;
}

/**
 * What the conversation cost: so far, the last turn, and what the prompt cache saved.
 * @param {ConversationUsageOut} usage
 */
export function costContent(usage) {
  if (!usage?.total?.calls) {
    return [];
  }
  const { total, lastTurn } = usage;
  // Calls stopped before their provider reported usage are counted here: their
  // figures, and every sum holding them, are estimates.
  const about = (u) => (u.estimatedCalls ? "≈" : "");
  const tokens = (u) =>
    `${about(u)}${formatTokens(u.inputTokens + u.cacheReadTokens + u.cacheCreationTokens)} in (${formatTokens(u.cacheReadTokens)} from cache) · ${formatTokens(u.outputTokens)} out`;
  const estimated = total.estimatedCalls
    ? h("p", {
        class: "note cost-estimated",
        text: `${total.estimatedCalls === 1 ? "One answer was" : `${total.estimatedCalls} answers were`} stopped before the provider reported its usage: counted by Foldline, so ≈.`,
      })
    : null;
  if (!usage.priced || total.cost === null) {
    return [
      h("h4", { text: "Usage" }),
      h("p", { class: "note cost-total", text: `This conversation: ${tokens(total)}` }),
      h("p", { class: "note cost-last-turn", text: `Last turn: ${tokens(lastTurn)}` }),
      h("p", { class: "note", text: "No price is known for this model: tokens only." }),
      estimated,
    ].filter(Boolean);
  }
  // Writing the prompt cache costs more than plain input; until later turns read it
  // back, the "saving" is negative: say what the writes cost instead.
  const writes = total.saved !== null && total.saved < 0;
  const rows = [
    ["This conversation", about(total) + formatUsd(total.cost), "cost-total"],
    ["Last turn", about(lastTurn) + formatUsd(lastTurn.cost), "cost-last-turn"],
    writes
      ? ["Cache writes cost", formatUsd(-total.saved), "cost-saved"]
      : ["Caching saved", formatUsd(total.saved), "cost-saved"],
  ];
  return [
    h("h4", { text: "Cost" }),
    h(
      "dl",
      { class: "cost" },
      rows.flatMap(([label, value, key]) => [
        h("dt", { text: label }),
        h("dd", { dataset: { cost: key }, text: value }),
      ]),
    ),
    h("p", { class: "note", text: `${tokens(total)}, summaries included.` }),
    estimated,
    writes
      ? h("p", {
          class: "note",
          text: "More than the cache has saved so far: later turns read the cached prefix back at a fraction of the price.",
        })
      : null,
  ].filter(Boolean);
}

/**
 * "fold being prepared" / "fold ready" next to the meter.
 * @param {BackgroundFoldOut} fold
 */
function backgroundBadge(fold) {
  if (!fold) {
    return null;
  }
  const ready = fold.status === "ready";
  const label =
    fold.kind === "resummary"
      ? ready
        ? "better summary ready"
        : "rewriting a summary"
      : ready
        ? "next summary ready"
        : "writing next summary";
  return h("span", {
    class: ["badge", "background-fold", ready ? "ready" : "preparing"],
    dataset: { status: fold.status },
    title: backgroundExplanation(fold),
    text: label,
  });
}

/**
 * What the background badge means, in plain words: shown in the meter's details (not
 * only on hover).
 * @param {BackgroundFoldOut} fold
 */
function backgroundExplanation(fold) {
  if (fold.kind === "resummary") {
    return fold.status === "ready"
      ? "A better summary of an earlier fold is ready; it replaces the stand-in digest when the conversation is idle."
      : "A better summary of an earlier fold is being written in the background; nothing waits for it.";
  }
  return fold.status === "ready"
    ? "The summary for the next fold is already written, so when the context fills up the fold happens with no wait. It is dropped if you compact or undo a fold first."
    : "The summary for the next fold is being written in the background while you read; no answer waits for it.";
}

export function meterLevel(fraction, soft, growth = 0) {
  if (fraction === null || fraction === undefined || !soft) {
    return "ok";
  }
  if (fraction >= soft) {
    return "danger";
  }
  if (fraction >= soft - (growth > 0 ? 2 * growth : WARNING_MARGIN)) {
    return "warn";
  }
  return "ok";
}

function autoFoldEnabled() {
  return state.settings?.compaction?.auto !== false;
}

function render() {
  const meter = byId("meter");
  const fill = byId("meter-fill");
  const text = byId("meter-text");
  const flag = byId("meter-flag");
  const popover = byId("meter-popover");
  const context = state.context;
  if (!context || !state.currentId) {
    meter.dataset.level = "ok";
    fill.style.width = "0%";
    text.textContent = "—";
    flag.hidden = true;
    popover.replaceChildren();
    renderWarning(null);
    return;
  }
  const budget = context.inputBudget;
  const unlimited = budget === null || budget === 0;
  const fraction = unlimited ? null : context.fraction;
  const soft = context.thresholds.soft;
  const level = unlimited ? "ok" : meterLevel(fraction, soft, lastTurnGrowth);
  meter.dataset.level = level;
  meter.setAttribute("aria-valuenow", String(context.tokens));
  if (!unlimited) {
    meter.setAttribute("aria-valuemax", String(budget));
  }
  fill.style.width = unlimited ? "0%" : `${Math.min(100, Math.max(0, fraction * 100)).toFixed(1)}%`;
  const approx = context.exact ? "" : "≈";
  // With a working budget the bar fills against it; the window is named beside it, so a
  // 1M-token model folding at 200k is never mistaken for a small one.
  const window = context.workingBudget ? ` · window ${formatTokens(context.contextWindow)}` : "";
  // The window is a span of its own: a phone's top bar leaves it to the popover.
  text.replaceChildren(
    unlimited
      ? `${approx}${formatTokens(context.tokens)} · no limit`
      : `${approx}${formatTokens(context.tokens)} / ${formatTokens(budget)}`,
    window ? h("span", { class: "meter-window", text: window }) : "",
  );
  const badge = backgroundBadge(context.backgroundFold);
  flag.hidden = context.modelKnown && !badge;
  flag.replaceChildren();
  if (!context.modelKnown) {
    flag.append(h("span", { class: "badge warn", text: "unknown window" }));
  }
  if (badge) {
    flag.append(badge);
  }
  popover.replaceChildren(...popoverContent(context, { unlimited, fraction, soft, level }));
  renderWarning(!unlimited && level !== "ok" ? { fraction, soft, level } : null);
}

/** @param {ContextOut} context */
function popoverContent(context, { unlimited, fraction, soft, level }) {
  const breakdown = context.breakdown;
  const total = Math.max(1, context.tokens);
  const stacked = h("div", { class: "stacked" });
  const rows = [];
  for (const [key, label] of PARTS) {
    const value = breakdown[key] ?? 0;
    const segment = h("span", { class: `swatch ${key}` });
    segment.style.width = `${((value / total) * 100).toFixed(2)}%`;
    stacked.append(segment);
    rows.push(
      h("span", { class: `swatch ${key}` }),
      h("dt", { text: label }),
      h("dd", { dataset: { part: key }, text: formatInteger(value) }),
    );
  }
  const heading = unlimited
    ? `${formatInteger(context.tokens)} tokens (no limit)`
    : `${formatInteger(context.tokens)} of ${formatInteger(context.inputBudget)} tokens · ${fraction >= 1 ? "more than fits: it folds first" : formatPercent(fraction)}`;
  const notes = [];
  notes.push(
    context.exact === false
      ? "Estimated from the model's tokenizer family, calibrated by the usage the provider reported."
      : "Exact count of the request the provider will receive.",
  );
  if (context.workingBudget) {
    notes.push(
      `Working budget ${formatTokens(context.workingBudget)} of a ${formatTokens(context.contextWindow)} window: it folds here to keep each turn cheap and answers sharp (models answer worse on very long inputs). Raise it in Settings → Models.`,
    );
  } else if (context.contextWindow) {
    notes.push(
      `Window ${formatTokens(context.contextWindow)}; input budget ${formatTokens(context.inputBudget)} after the output reserve.`,
    );
  }
  if (!unlimited) {
    notes.push(
      autoFoldEnabled()
        ? `Folds automatically at ${formatPercent(soft)} (${formatTokens(soft * context.inputBudget)}).`
        : "Automatic folding is off; use Compact.",
    );
  } else {
    notes.push("The context window is unlimited, so nothing folds automatically.");
  }
  const children = [
    h("h3", { text: heading }),
    stacked,
    h("dl", {}, rows),
    ...notes.map((note) => h("p", { class: "note", text: note })),
    ...costContent(context.usage),
  ];
  if (!context.modelKnown) {
    children.push(
      h("p", {
        class: "note warn",
        text: "This model's context window is unknown, so a conservative default is used. Set its limits in Settings → Models.",
      }),
    );
  }
  if (context.backgroundFold) {
    children.push(
      h("p", {
        class: "note background-fold-note",
        text: backgroundExplanation(context.backgroundFold),
      }),
    );
  }
  if (level === "danger") {
    children.push(
      h("p", { class: "note warn", text: "Over the fold threshold: the next turn folds first." }),
    );
  }
  return children;
}

/**
 * Whether the next message likely brings the context past the fold threshold: by the
 * last turn's growth when known, else when the percentage shown already reads as the
 * threshold's (79.7% reads "80%").
 */
function foldsNext({ fraction, soft }) {
  if (lastTurnGrowth > 0) {
    return fraction + lastTurnGrowth >= soft;
  }
  return Math.round(fraction * 100) >= Math.round(soft * 100);
}

/**
 * The words of the warning above the composer: how full the context is and when it
 * folds (before answering the message that takes it past the threshold; the words stay
 * short, as they sit above the composer on a phone).
 * @param {{fraction: number, soft: number, level: string}} info
 * @param {boolean} auto whether automatic folding is on
 */
export function foldWarningText(info, auto) {
  // Past 100% a percentage says nothing useful (1639%): say what happens next.
  if (info.fraction >= 1) {
    return auto
      ? "The context no longer fits this model's budget: it folds before the next answer."
      : "The context no longer fits this model's budget and automatic folding is off: compact it, or the next answer may be refused.";
  }
  if (info.level === "danger") {
    return auto
      ? `Context ${formatPercent(info.fraction)} full: the conversation folds before the next answer.`
      : `Context ${formatPercent(info.fraction)} full and automatic folding is off.`;
  }
  return auto
    ? `Context ${formatPercent(info.fraction)} full: it folds when a message takes it past ${formatPercent(info.soft)}${foldsNext(info) ? ", likely your next" : ""}.`
    : `Context ${formatPercent(info.fraction)} full; automatic folding is off.`;
}

/** The warning above the composer shortly before an automatic fold. */
function renderWarning(info) {
  const status = byId("composer-status");
  const existing = status.querySelector(".auto-fold-warning");
  if (!info || state.busy === "compact" || status.querySelector(".progress-banner")) {
    existing?.remove();
    return;
  }
  const message = foldWarningText(info, autoFoldEnabled());
  const element = h(
    "div",
    { class: "auto-fold-warning", role: "status" },
    icon("triangle-alert", "small"),
    h("span", { text: message }),
    h("button", {
      type: "button",
      class: "link-button",
      text: "Compact now",
      on: { click: () => app.compactNow() },
    }),
  );
  if (existing) {
    existing.replaceWith(element);
  } else {
    status.append(element);
  }
}
