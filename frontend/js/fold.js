// The fold line: where the model's view begins, what was folded, and the way back.
//
// The current fold is drawn at its `apiStartIndex` with its numbers, "Show summary" and
// "Undo". Earlier folds that are still part of the current stack are drawn as quieter
// lines at their own `apiStartIndex`, so the history shows every point where the
// conversation was folded.

import { h, icon } from "./dom.js";
import { formatInteger, formatTokens, formatWhen, plural } from "./format.js";
import { foldHandoffAction } from "./handoff.js";
import { renderMarkdown } from "./markdown.js";

const TRIGGER_LABELS = {
  auto: "automatic",
  manual: "manual",
  tool: "requested by the model",
  overflow: "after a context overflow",
  handoff: "the summary of the conversation this one continues",
};

/** Summaries the person opened, kept open when the lines are redrawn. */
const openSummaries = new Set();

/**
 * The folds to draw: the current one and the earlier versions it stacks on, found by
 * following `parentVersion` down from the current fold. That skips versions that were
 * undone (and those undone and then replaced by another fold): they are no longer part
 * of the history's story.
 * @param {CompactionVersionOut[]} compactions
 * @param {CompactionOut|null} current
 */
export function visibleFolds(compactions, current) {
  if (!current) {
    return [];
  }
  const known = new Map(compactions.map((fold) => [fold.version, fold]));
  const chain = [];
  let fold = { ...known.get(current.version), ...current };
  const seen = new Set();
  while (fold && !seen.has(fold.version)) {
    seen.add(fold.version);
    chain.push(fold);
    fold = fold.parentVersion ? known.get(fold.parentVersion) : null;
  }
  return chain.reverse();
}

/**
 * The fold that still applies once the history is cut at message `index` (an edit or a
 * regeneration there starts a new branch): a fold applies to a path only while its last
 * folded message (`apiStartIndex - 1`) is on it, so the folds ending at or after `index`
 * drop off and the newest earlier one in the current stack applies. Null for none.
 * @param {CompactionVersionOut[]} compactions
 * @param {CompactionOut|null} current
 */
export function foldKeptAt(compactions, current, index) {
  const chain = visibleFolds(compactions, current);
  return chain.filter((fold) => fold.apiStartIndex <= index).at(-1) ?? null;
}

/** @param {CompactionVersionOut} fold */
function summaryPanel(fold) {
  const text = fold.summaryMessage;
  return h(
    "div",
    { class: "fold-summary", dataset: { version: fold.version } },
    h(
      "div",
      { class: "fold-summary-head" },
      h("span", {
        text: `Summary v${fold.version} · ${fold.strategy}${fold.model ? ` · ${fold.model}` : ""}`,
      }),
      h("span", { text: formatWhen(fold.compactedAt) }),
    ),
    h("div", { class: "md" }, text ? renderMarkdown(text) : "(empty summary)"),
  );
}

/**
 * How many of the person's details (the sentences that state a decision, a constraint, a
 * person or a fact) the summary kept by itself and how many more the person's own words
 * kept after it hold, e.g. "The summary kept 3 of 15 of your details; 12 more in your own
 * words". Empty for folds without details.
 * @param {CompactionOut} fold
 */
export function detailsLine(fold) {
  const total = fold.detailsTotal;
  if (!total) {
    return "";
  }
  const kept = fold.detailsKept;
  const added = fold.detailsAppended;
  const who = fold.degraded ? "the digest" : "the summary";
  let text = `${who} kept ${formatInteger(kept)} of ${formatInteger(total)} of your key points`;
  if (added) {
    text += `; ${formatInteger(added)} more in your own words`;
  }
  const left = total - kept - added;
  if (left > 0) {
    text += `; ${formatInteger(left)} older left out for space`;
  }
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * What the fold cost in input and what it saves over the turns after it, e.g. "Cost:
 * the summary billed 1.1k tokens of input and 5.9k were cached again · Saves 4.2k tokens a request
 * over the next ~7 turns". Empty when the fold did not record them (a digest, an older fold).
 * @param {CompactionOut} fold
 */
export function costLine(fold) {
  const cost = fold.foldCost;
  if (!cost) {
    return "";
  }
  return (
    `Cost: the summary billed ${formatTokens(cost.summaryInputTokens)} tokens of input and ` +
    `${formatTokens(cost.rewrittenTokens)} were cached again · Saves ` +
    `${formatTokens(cost.savedPerTurn)} tokens a request over the next ~${plural(cost.turns, "turn")}`
  );
}

/**
 * What the fold's summarizer calls cost (tokens when the model has no price); nothing
 * for a fold without usage (a digest, an older fold, the versions not loaded yet).
 * @param {UsageOut|null|undefined} usage
 */
function foldCost(usage) {
  if (!usage) {
    return null;
  }
  const text =
    usage.cost === null
      ? `the summary took ${formatTokens(usage.inputTokens + usage.cacheReadTokens + usage.cacheCreationTokens + usage.outputTokens)} tokens`
      : `cost $${usage.cost.toFixed(usage.cost < 0.01 ? 4 : 3)}`;
  return h("span", {
    class: "fold-cost",
    title: `${plural(usage.calls, "summarizer call")}: ${formatInteger(usage.inputTokens + usage.cacheReadTokens + usage.cacheCreationTokens)} tokens in, ${formatInteger(usage.outputTokens)} out`,
    text: ` · ${text}`,
  });
}

/**
 * The fold's name on its line: its place in the chain the history shows. After an undo
 * the stored versions skip a number ("v1, v3"), which reads as a lost fold, so the
 * version is named only where it differs from the place.
 * @param {CompactionVersionOut} fold
 * @param {number} position
 */
export function foldTitle(fold, position) {
  return position === fold.version ? `Fold ${position}` : `Fold ${position} (version ${fold.version})`;
}

/**
 * One fold line element. `onUndo(fold)` is offered only on the current fold; `position`
 * is the fold's place (from 1) in the chain drawn.
 * @param {CompactionVersionOut} fold
 */
export function renderFoldLine(fold, { current, onUndo, position = fold.version }) {
  const range = fold.summarizedRange;
  const element = h("div", {
    class: ["fold-line", current ? "current" : "earlier"],
    dataset: { version: fold.version, apiStartIndex: fold.apiStartIndex },
    // A group, not a separator: the line holds buttons (show summary, undo).
    role: "group",
    "aria-label": `Fold version ${fold.version}`,
  });
  const summaryToggle = h("button", {
    type: "button",
    class: "link-button show-summary",
    text: openSummaries.has(fold.version) ? "Hide summary" : "Show summary",
  });
  const actions = h("span", { class: "fold-actions" }, summaryToggle, foldHandoffAction(fold));
  // A hand-off's summary is where the conversation starts: it has nothing to undo to.
  if (current && onUndo && fold.trigger !== "handoff") {
    actions.append(
      h(
        "button",
        {
          type: "button",
          class: "link-button undo-fold",
          title: "Make the previous version current again (nothing is deleted)",
          on: { click: () => onUndo(fold) },
        },
        icon("undo-2", "small"),
        "Undo",
      ),
    );
  }
  const badges = [];
  badges.push(
    h("span", {
      class: "badge fold-trigger",
      text: fold.trigger,
      title: TRIGGER_LABELS[fold.trigger] ?? "",
    }),
  );
  if (fold.strategy === "free-form") {
    badges.push(
      h("span", {
        class: "badge fold-free-form",
        text: "free-form",
        title:
          "The summarizer ignored the requested sections; its summary is kept as written, and your own words stay beside it",
      }),
    );
  }
  if (fold.degraded) {
    badges.push(
      h(
        "span",
        {
          class: "badge warn fold-degraded",
          title:
            "The summarizer could not be used; an extractive digest stands in for it and will be re-summarized later",
        },
        icon("triangle-alert", "small"),
        "degraded",
      ),
    );
  }
  const card = h(
    "div",
    { class: "fold-card" },
    h(
      "div",
      { class: "fold-head" },
      h("span", { class: "fold-title" }, icon("layers", "small"), foldTitle(fold, position)),
      h(
        "span",
        { class: "fold-stats" },
        fold.trigger === "handoff"
          ? h("span", { class: "fold-count", text: "Summary of the earlier conversation" })
          : h("span", { class: "fold-count", text: plural(range.messageCount, "message") }),
        fold.trigger === "handoff" ? " · " : " folded · ",
        h("span", { class: "fold-tokens-before", text: formatTokens(fold.tokensBefore) }),
        h("span", { class: "arrow", text: "→" }),
        h("span", { class: "fold-tokens-after", text: formatTokens(fold.tokensAfter) }),
        " tokens",
        foldCost(fold.usage),
      ),
      badges,
      actions,
    ),
  );
  card.title =
    `Messages ${formatInteger(range.fromIndex)}–${formatInteger(Math.max(0, range.toIndex - 1))} ` +
    `folded ${TRIGGER_LABELS[fold.trigger] ?? ""}; ${formatInteger(fold.tokensBefore)} → ${formatInteger(fold.tokensAfter)} tokens`;
  const details = detailsLine(fold);
  if (details) {
    card.append(
      h("div", { class: "fold-details", text: details }),
      h("div", {
        class: "fold-details-help",
        text: "Key points are the sentences where you state a decision, a constraint, a name or a fact; each is kept, in the summary or word for word.",
      }),
    );
  }
  const cost = costLine(fold);
  if (cost) {
    card.append(h("div", { class: "fold-cost-line", text: cost }));
  }
  // The files the fold took out of the model's view (a pinned message's stay in it).
  if (fold.files?.length) {
    card.append(
      h(
        "div",
        { class: "fold-files" },
        icon("paperclip", "small"),
        `${plural(fold.files.length, "file")} folded: ${fold.files.join(", ")}`,
      ),
    );
  }
  element.append(h("div", { class: "fold-rule" }), card);
  if (current && fold.trigger !== "handoff") {
    element.append(
      h(
        "p",
        { class: "fold-caption" },
        "Above: display only, the model sees the summary instead. The model sees from here ",
        icon("arrow-up", "small"),
      ),
    );
  }
  let panel = openSummaries.has(fold.version) ? summaryPanel(fold) : null;
  if (panel) {
    element.append(panel);
  }
  summaryToggle.addEventListener("click", () => {
    if (panel) {
      panel.remove();
      panel = null;
      openSummaries.delete(fold.version);
      summaryToggle.textContent = "Show summary";
    } else {
      panel = summaryPanel(fold);
      element.append(panel);
      openSummaries.add(fold.version);
      summaryToggle.textContent = "Hide summary";
    }
  });
  return element;
}
