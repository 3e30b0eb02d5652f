// The Compact dialog: what a fold would fold, optional instructions, progress, outcome.

import { api } from "./api.js";
import { openModal } from "./dialog.js";
import { h, icon } from "./dom.js";
import { redoOffer } from "./fold-redo.js";
import { formatInteger, formatTokens, plural } from "./format.js";
import { notify } from "./notices.js";
import { state } from "./state.js";
import { compactNow, isRunning, stop } from "./turn.js";

/** @type {Array<[number, string]>} */
const KEEP_CHOICES = [
  [0, "Only the last exchange (fold everything before it)"],
  [2000, "About 2,000 tokens of recent messages"],
  [8000, "About 8,000 tokens of recent messages (as an automatic fold)"],
  [32000, "About 32,000 tokens of recent messages"],
];
/** What an automatic fold keeps verbatim by default (`keep_recent_tokens`). */
const DEFAULT_KEEP_TOKENS = 8000;

/** @param {CompactionPreview} preview */
function previewBox(preview) {
  if (!preview || !preview.messages || preview.toIndex === null || preview.toIndex === undefined) {
    return h(
      "div",
      { class: "preview-box", dataset: { empty: "true" } },
      "Nothing can be folded now: the most recent messages are always kept verbatim, and there is nothing older in the model's view.",
    );
  }
  return h(
    "div",
    { class: "preview-box" },
    h("div", {
      text: `Messages #${formatInteger(preview.fromIndex)} to #${formatInteger(preview.toIndex - 1)} would be replaced in the model's view by a summary. They stay in your history, above a fold line, and the fold can be undone.`,
    }),
    h(
      "div",
      { class: "preview-numbers" },
      h(
        "div",
        { class: "preview-number" },
        h("strong", { class: "preview-messages", text: formatInteger(preview.messages) }),
        h("span", { text: preview.messages === 1 ? "message to fold" : "messages to fold" }),
      ),
      h(
        "div",
        { class: "preview-number" },
        h("strong", { class: "preview-tokens", text: formatTokens(preview.tokens) }),
        h("span", { text: "tokens they take now" }),
      ),
    ),
  );
}

/**
 * Open the dialog for the current conversation; `afterRedo` redraws after an undone fold
 * was brought back from it.
 */
export async function openCompactDialog({ afterRedo = async () => {} } = {}) {
  if (!state.currentId) {
    return;
  }
  if (isRunning()) {
    notify({
      kind: "info",
      title: "Busy",
      text: "Wait for the current answer to finish, or stop it.",
    });
    return;
  }
  const previewSlot = h(
    "div",
    { class: "preview-slot" },
    h(
      "div",
      { class: "progress-row" },
      icon("loader", "small spin"),
      "Working out what would fold…",
    ),
  );
  const instructions = h("textarea", {
    class: "textarea",
    id: "compact-instructions",
    rows: "3",
    maxlength: "20000",
    placeholder: "e.g. Keep the final database schema and every decision about the API verbatim.",
  });
  // By default the gentle choice: about as much recent conversation stays verbatim as an
  // automatic fold keeps. When that would fold nothing, the first preview steps down to
  // the largest choice that folds something; "only the last exchange" is never the
  // default unless it is the only one that helps.
  const keep = h(
    "select",
    { class: "select", id: "compact-keep" },
    ...KEEP_CHOICES.map(([tokens, label]) => h("option", { value: String(tokens), text: label })),
  );
  keep.value = String(DEFAULT_KEEP_TOKENS);
  const message = h("div", { class: "compact-message", "aria-live": "polite" });
  const body = h(
    "div",
    { class: "modal-body" },
    previewSlot,
    h(
      "label",
      { class: "field compact-keep-field" },
      h("span", { class: "field-label", text: "Keep verbatim" }),
      keep,
    ),
    h(
      "label",
      { class: "field compact-instructions-field" },
      h("span", { class: "field-label", text: "Instructions for the summary (optional)" }),
      instructions,
      h("span", {
        class: "field-help",
        text: "What must survive the fold word for word. The summary always quotes your own instructions and your last request.",
      }),
    ),
    message,
  );
  const cancel = h("button", { type: "button", class: "button", text: "Cancel" });
  const confirm = h(
    "button",
    { type: "button", class: "button primary", id: "compact-confirm" },
    icon("layers", "small"),
    "Compact now",
  );
  const dialog = openModal({
    title: "Compact the conversation",
    subtitle:
      "Older messages become a summary; the model sees the summary and the recent messages.",
    id: "compact-dialog",
    body,
    foot: h("div", { class: "modal-foot" }, cancel, confirm),
  });
  // An undone fold that still fits comes back without a new summary: offered first.
  redoOffer(state.currentId, async () => {
    dialog.close();
    await afterRedo();
  }).then((offer) => offer && body.prepend(offer));
  let runningHere = false;
  cancel.addEventListener("click", () => {
    if (runningHere) {
      stop();
    } else {
      dialog.close();
    }
  });
  dialog.addEventListener("cancel", (event) => {
    // Esc while summarizing would hide the progress without stopping it: keep it open.
    if (runningHere) {
      event.preventDefault();
    }
  });

  const keptTokens = () => Number(keep.value) || undefined;
  let firstPreview = true;
  async function showPreview() {
    try {
      let preview = await api.compactionPreview(state.currentId, keptTokens());
      // Step down from the gentle default only on opening, never after the person chose.
      while (firstPreview && !preview?.messages && Number(keep.value) > 0) {
        const smaller = KEEP_CHOICES.map(([tokens]) => tokens)
          .filter((tokens) => tokens < Number(keep.value))
          .at(-1);
        keep.value = String(smaller ?? 0);
        preview = await api.compactionPreview(state.currentId, keptTokens());
      }
      firstPreview = false;
      previewSlot.replaceChildren(previewBox(preview));
      confirm.disabled = runningHere || !preview?.messages;
    } catch (error) {
      previewSlot.replaceChildren(
        h(
          "div",
          { class: "inline-error" },
          icon("circle-alert", "small"),
          `The preview failed: ${error.message}`,
        ),
      );
    }
  }
  keep.addEventListener("change", showPreview);
  await showPreview();

  confirm.addEventListener("click", async () => {
    runningHere = true;
    confirm.disabled = true;
    instructions.disabled = true;
    cancel.textContent = "Stop";
    const started = Date.now();
    const progressText = h("span", { text: "Summarizing…" });
    const progress = h(
      "div",
      { class: "progress-row", dataset: { state: "running" } },
      icon("loader", "small spin"),
      progressText,
    );
    message.replaceChildren(progress);
    const timer = setInterval(() => {
      progressText.textContent = `Summarizing… ${Math.round((Date.now() - started) / 1000)} s`;
    }, 1000);
    keep.disabled = true;
    const outcome = await compactNow(instructions.value.trim() || undefined, {
      keepRecentTokens: keptTokens(),
    });
    clearInterval(timer);
    runningHere = false;
    cancel.textContent = "Close";
    if (outcome?.completed && !outcome.completed.degraded) {
      dialog.close();
      return;
    }
    if (outcome?.completed?.degraded) {
      const range = outcome.completed.summarizedRange;
      message.replaceChildren(
        h(
          "div",
          { class: "inline-error", dataset: { outcome: "degraded" } },
          icon("triangle-alert", "small"),
          `The summarizer could not be used, so Foldline made an emergency fold instead: ${plural(range.messageCount, "message")} replaced by an extractive digest (your requests verbatim, files and tools touched, the open task). It is marked “degraded” and will be re-summarized later.`,
        ),
      );
      return;
    }
    const reason =
      outcome?.failed?.reason ||
      outcome?.error?.message ||
      "The fold did not complete. Nothing was changed.";
    message.replaceChildren(
      h(
        "div",
        { class: "inline-error", dataset: { outcome: "failed" } },
        icon("circle-alert", "small"),
        reason,
      ),
    );
    confirm.disabled = false;
    instructions.disabled = false;
    keep.disabled = false;
  });
  instructions.focus();
}
