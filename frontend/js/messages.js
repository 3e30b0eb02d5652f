// One message of the display history as DOM: bubbles, Markdown, reasoning, tool cards,
// and its status (streaming, interrupted, error with retry).
//
// Tool results live in the `tool` message after the assistant message that made the
// calls; they are drawn inside the call's card when that card is on screen, so a call
// and its output read as one thing. `tools` (see chat.js) tells the renderer which
// calls are loaded and which results are known.

import { api } from "./api.js";
import { renderFilePart } from "./attachments.js";
import { branchButton, siblingAt, versionSwitcher, versionsOf } from "./branch-controls.js";
import { copyText, flashCopied, h, icon } from "./dom.js";
import { handoffButton } from "./handoff.js";
import { pinButton } from "./pins.js";
import { formatTokens, formatWhen } from "./format.js";
import { plainText, renderMarkdown } from "./markdown.js";
import { notifyError } from "./notices.js";
import { renderReasoning } from "./reasoning-block.js";
import { isRecallCall, renderRecallLine } from "./recall-line.js";
import { state } from "./state.js";

/** Tool cards the person opened, so re-rendering a streaming message keeps them open. */
const openCards = new Set();

/**
 * The text a person would copy from a message.
 * @param {MessageOut} message
 */
export function messageText(message) {
  return message.parts
    .filter((part) => part.kind === "text")
    .map((part) => part.text)
    .join("");
}

function previewOfInput(input) {
  if (!input || typeof input !== "object") {
    return "";
  }
  const values = Object.values(input);
  if (values.length === 1 && typeof values[0] === "string") {
    return values[0].split("\n")[0].slice(0, 120);
  }
  const compact = JSON.stringify(input);
  return compact === "{}" ? "" : compact.slice(0, 120);
}

function pretty(value) {
  if (typeof value === "string") {
    return value;
  }
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** The note under a truncated output, with a way to see what the model did not. */
function truncationNote(result) {
  const note = h("p", {
    class: "tool-note",
    text: "The model saw a shortened output (the omission is marked above). The full output is kept. ",
  });
  if (result.messageId && Number.isInteger(result.partIndex)) {
    const button = h("button", { type: "button", class: "link-button", text: "Show full output" });
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        const full = await api.fullOutput(state.currentId, result.messageId, result.partIndex);
        const pre = note.parentElement?.querySelector(".tool-output");
        if (pre) {
          pre.textContent = full.output ?? "";
        }
        note.replaceChildren("Showing the full output; the model saw a shortened one.");
      } catch (error) {
        button.disabled = false;
        notifyError("Could not load the full output", error);
      }
    });
    note.append(button);
  }
  return note;
}

/** A collapsible card for one tool call and (when known) its result. */
export function renderToolCard({ call, result, running = false }) {
  const callId = call?.id ?? result?.callId ?? "";
  const name = call?.name ?? result?.name ?? "tool";
  const badges = [];
  if (running && !result) {
    badges.push(
      h("span", { class: "badge accent tool-status" }, icon("loader", "small spin"), "running"),
    );
  }
  if (result?.isError) {
    badges.push(h("span", { class: "badge danger", text: "error" }));
  }
  if (result?.truncated) {
    badges.push(
      h("span", {
        class: "badge warn",
        text: "truncated",
        title: "The model saw a shortened output; the full output is kept",
      }),
    );
  }
  if (result?.compactedAt) {
    badges.push(
      h("span", {
        class: "badge",
        text: "pruned",
        title: "Replaced by a placeholder in the model's view",
      }),
    );
  }
  const body = h("div", { class: "tool-body" });
  if (call) {
    body.append(
      h("div", { class: "tool-section-label", text: "Input" }),
      h("pre", { class: "tool-input", text: pretty(call.input ?? {}), tabindex: "0" }),
    );
  }
  if (result) {
    body.append(
      h("div", { class: "tool-section-label", text: result.isError ? "Error" : "Output" }),
      // Focusable, so a long output can be scrolled from the keyboard.
      h("pre", { class: "tool-output", text: result.output ?? "", tabindex: "0" }),
    );
    for (const attachment of result.attachments ?? []) {
      if (attachment.sha256) {
        // Stored once like a person's file: fetched by its sha256 (an image shows, a
        // PDF or another file is a chip that downloads).
        body.append(h("div", { class: "tool-files" }, renderFilePart(attachment)));
      } else if (attachment.mediaType?.startsWith("image/") && attachment.dataBase64) {
        body.append(
          h("img", {
            class: "tool-image",
            alt: attachment.name,
            src: `data:${attachment.mediaType};base64,${attachment.dataBase64}`,
          }),
        );
      }
    }
    if (result.truncated) {
      body.append(truncationNote(result));
    }
    if (result.compactedAt) {
      body.append(
        h("p", {
          class: "tool-note",
          text: `Pruned from the model's view at ${formatWhen(result.compactedAt) || result.compactedAt}; the model sees a short placeholder instead.`,
        }),
      );
    }
  } else if (!running) {
    body.append(h("p", { class: "tool-note", text: "No result recorded for this call." }));
  }
  const card = h(
    "details",
    {
      class: ["tool-card", result?.isError && "error", running && !result && "running"],
      dataset: { callId },
      open: openCards.has(callId),
      on: {
        toggle: (event) => {
          if (event.currentTarget.open) {
            openCards.add(callId);
          } else {
            openCards.delete(callId);
          }
        },
      },
    },
    h(
      "summary",
      {},
      icon("chevron-right", "small chevron"),
      icon("wrench", "small"),
      h("span", { class: "tool-name", text: name }),
      h("span", { class: "tool-preview", text: previewOfInput(call?.input) }),
      h("span", { class: "tool-badges" }, badges),
    ),
    body,
  );
  return isRecallCall(name) ? renderRecallLine({ call, result, running }, card) : card;
}

/** @param {AttachmentPartOut} part */
function renderAttachment(part) {
  return renderFilePart(part);
}

function retryButton(message, onRetry, label) {
  return h(
    "button",
    { type: "button", class: "button retry-button", on: { click: () => onRetry(message) } },
    icon("rotate-ccw", "small"),
    label,
  );
}

/** @param {MessageOut} message */
function statusLine(message, { onRetry, canRetry }) {
  if (message.status === "interrupted") {
    // The partial answer stays in the model's view, so asking again lets it go on.
    return h(
      "div",
      { class: "status-line interrupted", dataset: { status: "interrupted" } },
      h("span", { class: "badge warn", text: "Interrupted" }),
      h("span", {
        class: "status-text",
        // Continue is offered on the last message only: elsewhere the text must not
        // point at a button that is not there.
        text:
          message.role === "tool"
            ? "Stopped while the tools ran; a call that did not finish is marked interrupted."
            : !(canRetry && onRetry)
              ? "Stopped before the end; the partial answer is kept."
              : (message.parts ?? []).some((part) => part.kind === "tool-call")
                ? "Stopped before the end; the partial answer is kept. Continue answers after it."
                : "Stopped before the end; the partial answer is kept. Continue finishes it here.",
      }),
      canRetry && onRetry ? retryButton(message, onRetry, "Continue") : null,
    );
  }
  if (message.status === "error") {
    const text = message.error || "The model call failed before this answer was complete.";
    return h(
      "div",
      { class: "status-line error", dataset: { status: "error" }, role: "alert" },
      icon("circle-alert"),
      h("span", { class: "status-text", text }),
      canRetry && onRetry ? retryButton(message, onRetry, "Retry") : null,
    );
  }
  return null;
}

/** @param {MessageOut} message */
function metaRow(message, { onEdit, onRegenerate, onSwitch }) {
  const copy = h(
    "button",
    {
      type: "button",
      class: "icon-button",
      title: "Copy message",
      "aria-label": "Copy message",
      on: {
        click: async (event) => {
          const button = event.currentTarget;
          if (await copyText(messageText(message))) {
            flashCopied(button);
          }
        },
      },
    },
    icon("copy", "small"),
  );
  // Free-form in the schema (an imported history may carry another app's); Foldline
  // writes a `usage` event's fields.
  const outputTokens = message.usage?.outputTokens;
  // Reasoning is billed as output; where the provider says how much of it, so does this.
  const reasoningTokens = message.usage?.reasoningTokens;
  // A call stopped before its end reported nothing: its words were counted instead.
  const estimated = message.usage?.estimatedOutputTokens;
  const usageText = outputTokens
    ? `${estimated ? "≈" : ""}${formatTokens(outputTokens)} tokens out` +
      (reasoningTokens ? ` (${formatTokens(reasoningTokens)} reasoning)` : "")
    : "";
  // How fast it came: the wait for its first token, and its tokens per second.
  const firstToken = message.usage?.firstTokenSeconds;
  const perSecond = message.usage?.tokensPerSecond;
  const speedText = [
    typeof firstToken === "number" ? `first token ${firstToken.toFixed(firstToken < 10 ? 1 : 0)} s` : "",
    typeof perSecond === "number" ? `${perSecond.toFixed(perSecond < 10 ? 1 : 0)} tok/s` : "",
  ]
    .filter(Boolean)
    .join(" · ");
  const switcher = versionSwitcher(message, onSwitch);
  return h(
    "div",
    { class: ["message-meta", switcher && "has-versions"] },
    switcher,
    h("span", { class: "message-index", text: `#${message.index}` }),
    message.createdAt ? h("span", { text: formatWhen(message.createdAt) }) : null,
    usageText
      ? h("span", {
          class: "usage-text",
          text: usageText,
          title: estimated
            ? `Every part of this answer; ${formatTokens(estimated)} of them counted here, as the provider reports no usage for a stopped call.`
            : null,
        })
      : null,
    speedText
      ? h("span", {
          class: "speed-text",
          text: speedText,
          title: "Time to the first token of the answer, and tokens per second while it streamed",
        })
      : null,
    message.continued
      ? h("span", {
          class: "badge continued-mark",
          text: "continued",
          title: "Continue finished this answer after a stop or an error",
        })
      : null,
    messageText(message) ? copy : null,
    branchButton(message, { onEdit, onRegenerate }),
    pinButton(message),
    handoffButton(message),
  );
}

/**
 * Build the element of one message. `tools.resultFor(callId)` gives a known result;
 * `tools.hasCall(callId)` says whether the call's card is loaded (its result is then
 * drawn there, not in the tool message). `onRetry`, `onEdit`, `onRegenerate` and
 * `onSwitch` are what its buttons do; without one, its button is left out.
 * @param {MessageOut} message
 */
export function renderMessage(message, options) {
  const element = h("article", {
    class: ["message", message.role, options.streaming && "streaming"],
    dataset: {
      index: message.index,
      id: message.id ?? "",
      role: message.role,
      status: message.status ?? "",
    },
  });
  fillMessage(element, message, options);
  return element;
}

/**
 * Alt+Left / Alt+Right anywhere inside a message that has versions switches to the
 * previous / next one (the switcher's buttons do the same for the mouse and Tab).
 */
function switchKeys(element, message, onSwitch) {
  element.onkeydown =
    onSwitch && versionsOf(message).length > 1
      ? (event) => {
          const step = { ArrowLeft: -1, ArrowRight: 1 }[event.key];
          if (!event.altKey || !step || event.target.closest("textarea, input")) {
            return;
          }
          event.preventDefault();
          if (siblingAt(message, step)) {
            onSwitch(message, step);
          }
        }
      : null;
}

/**
 * (Re)draw the inside of a message element, e.g. as a streamed answer grows. Drawing one
 * message can never break the page: if it fails, that message shows its text as it is.
 */
export function fillMessage(element, message, options) {
  element.classList.toggle("streaming", Boolean(options.streaming));
  // A message shown before the server stored it gets its id when the stored copy arrives.
  element.dataset.id = message?.id ?? "";
  element.dataset.status = message?.status ?? "";
  try {
    drawMessage(element, message, options);
  } catch (error) {
    console.warn("A message could not be drawn; showing its text", error);
    element.replaceChildren(
      h("div", { class: "md" }, plainText(messageText(message), "it could not be drawn")),
    );
  }
}

/** @param {MessageOut} message */
function drawMessage(element, message, options) {
  const { tools, onRetry, canRetry = false, streaming = false } = options;
  const parts = message.parts ?? [];
  const children = [];

  if (message.role === "user") {
    const text = messageText(message);
    if (text) {
      children.push(h("div", { class: "bubble", text }));
    }
    const attachments = parts.filter((part) => part.kind === "attachment");
    if (attachments.length) {
      children.push(h("div", { class: "attachments" }, attachments.map(renderAttachment)));
    }
  } else if (message.role === "assistant") {
    const content = [];
    let textRun = "";
    const flushText = () => {
      if (textRun) {
        // A long answer still streaming is redrawn every frame; highlighting it each
        // time would be the slowest part, so it waits for the final text. Its passing
        // texts are not kept for a redraw either (only final texts are drawn again).
        const highlight = streaming && textRun.length > 20000 ? false : "lazy";
        const rendered = renderMarkdown(textRun, { highlight, keep: !streaming });
        content.push(h("div", { class: "md" }, rendered));
        textRun = "";
      }
    };
    // Consecutive reasoning parts are one block, drawn where the first one stands.
    let reasoningRun = [];
    const flushReasoning = (last) => {
      if (reasoningRun.length) {
        const thinking = streaming && last;
        const seconds = message.usage?.reasoningSeconds;
        content.push(renderReasoning(reasoningRun, { seconds, thinking }));
        reasoningRun = [];
      }
    };
    for (const part of parts) {
      if (part.kind !== "reasoning") {
        flushReasoning(false);
      }
      if (part.kind === "text") {
        textRun += part.text;
      } else if (part.kind === "reasoning") {
        flushText();
        reasoningRun.push(part);
        continue;
      } else if (part.kind === "tool-call") {
        flushText();
        content.push(
          renderToolCard({ call: part, result: tools.resultFor(part.id), running: streaming }),
        );
      } else if (part.kind === "attachment") {
        flushText();
        content.push(renderAttachment(part));
      }
    }
    flushReasoning(true);
    flushText();
    children.push(h("div", { class: "content" }, content));
  } else {
    // A tool message: draw only the results whose call card is not on screen.
    for (const part of parts) {
      if (part.kind === "tool-result" && !tools.hasCall(part.callId)) {
        children.push(renderToolCard({ call: null, result: part }));
      }
    }
  }

  const status = statusLine(message, { onRetry, canRetry });
  if (status) {
    children.push(status);
  }
  if (message.role !== "tool" && !streaming) {
    children.push(metaRow(message, options));
  }
  element.dataset.versions = String(versionsOf(message).length);
  switchKeys(element, message, options.onSwitch);
  element.replaceChildren(...children);
}
