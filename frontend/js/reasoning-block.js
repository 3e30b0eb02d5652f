// The model's reasoning above its answer: one collapsed block, "Thought for 12 s", that
// opens to the reasoning's text (the full thinking, or the provider's summary of it).
// While the model is still thinking it reads "Thinking…" and its text grows live.

import { h, icon } from "./dom.js";
import { renderMarkdownInto } from "./markdown.js";

/** "Thought for 12 s", "Thought for 1 min 5 s"; "Thought" when the time is unknown. */
export function thoughtLabel(seconds) {
  if (typeof seconds !== "number") {
    return "Thought";
  }
  if (seconds < 1) {
    return "Thought for under a second";
  }
  const whole = Math.round(seconds);
  if (whole < 60) {
    return `Thought for ${whole} s`;
  }
  const rest = whole % 60;
  return `Thought for ${Math.floor(whole / 60)} min${rest ? ` ${rest} s` : ""}`;
}

/**
 * One block for a run of reasoning parts.
 * @param {ReasoningPartOut[]} parts
 * @param {{seconds?: number, thinking?: boolean}} options `thinking`: the model is still
 *   reasoning (the answer has not begun).
 */
export function renderReasoning(parts, { seconds, thinking = false } = {}) {
  const texts = parts.map((part) => part.text).filter(Boolean);
  const redacted = parts.some((part) => part.redacted);
  const label = thinking ? "Thinking…" : thoughtLabel(seconds);
  const body = texts.join("\n\n");
  // Models write their reasoning (OpenAI's summaries above all) in Markdown: a finished
  // block is formatted like an answer; a growing one stays plain text until it ends.
  const text = h("div", { class: ["reasoning-text", !thinking && "md"], text: thinking ? body : null });
  if (!thinking) {
    renderMarkdownInto(text, body, { highlight: false });
  }
  return h(
    "details",
    { class: ["reasoning", thinking && "thinking"] },
    h("summary", {}, icon("chevron-right", "small"), h("span", { text: label })),
    text,
    redacted
      ? h("div", {
          class: "reasoning-note",
          text: "Part of this reasoning was encrypted by the provider and is not shown.",
        })
      : null,
  );
}
