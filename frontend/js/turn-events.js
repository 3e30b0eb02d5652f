// Applying the events of a running turn or fold to the views: the live copies of its
// messages (redrawn at most once a frame while they stream), the progress banner above the
// composer, the tool cards' approvals, questions and progress, and the notices a fold, a
// prune, a tool server or an error raise. `turn.js` reads the streams and calls in here.

import { app } from "./app.js";
import { putMessage, putToolResult, totalMessages } from "./chat.js";
import { byId, h, icon } from "./dom.js";
import { formatTokens, plural } from "./format.js";
import { hideApproval, showApproval } from "./mcp.js";
import { hideQuestion, showQuestion, showToolProgress } from "./mcp-questions.js";
import { updateContext } from "./meter.js";
import { DISK_FULL_TITLE, notify } from "./notices.js";
import { setBusy, state } from "./state.js";

/** The title of each `notice` a turn can send (the message says the rest). */
const NOTICE_TITLES = {
  mcp_server_failed: "A tool server is unavailable",
  mcp_tools_limited: "Some tools are left out",
  mcp_server_awaiting_approval: "A new tool server waits for your yes",
  mcp_sign_in_required: "A tool server needs you to sign in",
};

// ---- the progress banner above the composer --------------------------------------------

export function showProgress(text) {
  const status = byId("composer-status");
  status.querySelector(".auto-fold-warning")?.remove();
  let banner = status.querySelector(".progress-banner");
  if (!banner) {
    banner = h("div", { class: "progress-banner", role: "status" });
    status.prepend(banner);
  }
  banner.replaceChildren(icon("loader", "small spin"), h("span", { text }));
}

export function hideProgress() {
  byId("composer-status").querySelector(".progress-banner")?.remove();
}

// ---- applying events ---------------------------------------------------------------

/**
 * What the views know of the running stream: its conversation, live copies of its
 * messages by id, the first index it touched (re-read from the store when it ends),
 * whether the page missed messages before it (`stale`), and its error event.
 * @typedef {Object} LiveStream
 * @property {string|null} conversationId
 * @property {Map<string, MessageOut>} byId
 * @property {number} firstIndex
 * @property {boolean} [stale]
 * @property {ErrorEventBody} [error]
 */

/** @returns {LiveStream} */
export function newLiveState() {
  return {
    conversationId: state.currentId,
    byId: new Map(),
    firstIndex: totalMessages(),
  };
}

/** Events of a turn draw only while its conversation is the one on screen. */
const VIEW_EVENTS = new Set([
  "message.created",
  "assistant.delta",
  "tool.call",
  "tool.result",
  "message.completed",
  "context.stats",
  "compaction.started",
  "compaction.completed",
]);

/**
 * Apply one event of the running stream to the views.
 * @param {LiveStream} live the stream's live state (`newLiveState`)
 * @param {StreamEvent} event the event, its body typed by its name (types.js)
 */
export function applyEvent(live, event) {
  const { name, data } = event;
  if (VIEW_EVENTS.has(name) && state.currentId !== live.conversationId) {
    // The person opened another conversation; the turn goes on and is saved, and what it
    // did shows when they come back. Only the notices below still apply.
    if (name === "compaction.completed") {
      announceFold(data);
    }
    return;
  }
  switch (name) {
    case "message.created": {
      const copy = { ...data.message, parts: [...data.message.parts] };
      if (copy.index > totalMessages()) {
        // The stored history has messages this page never showed (a turn from another
        // window it did not hear of): once this one ends, the page is read again.
        live.stale = true;
      }
      live.byId.set(copy.id, copy);
      live.firstIndex = Math.min(live.firstIndex, copy.index);
      putMessage(copy, { streaming: copy.status === "streaming" });
      break;
    }
    case "assistant.delta": {
      const message = live.byId.get(data.messageId);
      if (!message) {
        break;
      }
      const last = message.parts.at(-1);
      const grows = last?.kind === "text" || last?.kind === "reasoning";
      if (grows && last.kind === data.kind) {
        message.parts[message.parts.length - 1] = { ...last, text: last.text + data.text };
      } else {
        // A reasoning part as it streams: not signed yet, and not redacted (a redacted
        // one has no text to stream); the completed message brings the stored part.
        message.parts.push(
          data.kind === "reasoning"
            ? { kind: "reasoning", text: data.text, signature: null, redacted: false }
            : { kind: "text", text: data.text },
        );
      }
      scheduleDraw(message);
      break;
    }
    case "tool.call": {
      const message = live.byId.get(data.messageId);
      if (message) {
        message.parts.push({
          kind: "tool-call",
          id: data.id,
          name: data.name,
          input: data.input,
        });
        scheduleDraw(message);
      }
      break;
    }
    case "tool.result":
      putToolResult({ ...data });
      break;
    case "message.completed": {
      const message = data.message;
      live.byId.set(message.id, message);
      cancelDraw(message.id);
      putMessage(message);
      break;
    }
    case "context.stats":
      updateContext(data);
      break;
    case "compaction.started":
      showProgress(
        data.trigger === "manual"
          ? "Summarizing…"
          : `Folding the conversation (${data.trigger}): summarizing…`,
      );
      setBusy(state.busy === "compact" ? "compact" : "turn");
      break;
    case "compaction.completed":
      hideProgress();
      announceFold(data);
      app.foldsChanged();
      break;
    case "compaction.failed":
      hideProgress();
      notify({
        kind: "warn",
        title: "The fold did not happen",
        text: data.reason,
      });
      break;
    case "prune.completed":
      notify({
        kind: "info",
        title: "Old tool outputs pruned",
        text: `${plural(data.prunedCalls, "tool output")} replaced by placeholders in the model's view (about ${formatTokens(data.reclaimedTokens)} tokens freed). The outputs stay in the history.`,
      });
      break;
    case "tool.approval_required":
      showApproval(live.conversationId, data);
      break;
    case "tool.approval_resolved":
      hideApproval(data.callId);
      break;
    case "tool.elicitation_required":
      showQuestion(live.conversationId, data);
      break;
    case "tool.elicitation_resolved":
      hideQuestion(data.elicitationId);
      break;
    case "tool.progress":
      showToolProgress(data);
      break;
    case "notice":
      notify({
        kind: "warn",
        title: NOTICE_TITLES[data.code] ?? "A tool server is unavailable",
        text: data.message,
      });
      break;
    case "error":
      // Shown when the stream ends, unless the failed answer already says it inline.
      live.error = data;
      break;
    default:
      break;
  }
}

function errorTitle(code) {
  switch (code) {
    case "auth":
      return "The provider refused the API key";
    case "rate_limited":
      return "Rate limited by the provider";
    case "overloaded":
      return "The provider is overloaded";
    case "unavailable":
      return "The provider cannot be reached";
    case "context_overflow":
      return "The request was too large for the model";
    case "disk_full":
      return DISK_FULL_TITLE;
    default:
      return "The model call failed";
  }
}

/** @param {CompactionCompleted} data */
function announceFold(data) {
  const text = `${plural(data.summarizedRange.messageCount, "message")} folded, ${formatTokens(data.tokensBefore)} → ${formatTokens(data.tokensAfter)} tokens.`;
  if (data.degraded) {
    notify({
      kind: "warn",
      title: `Emergency fold v${data.version}`,
      text: `${text} The summarizer could not be used, so an extractive digest stands in for the summary; it is re-summarized later.`,
    });
  } else if (data.strategy === "free-form") {
    notify({
      kind: "info",
      title: `Folded (v${data.version}, ${data.trigger}), free-form`,
      text: `${text} The summarizer ignored the requested sections; its summary is kept as written, and your own words stay beside it.`,
    });
  } else {
    notify({ kind: "success", title: `Folded (v${data.version}, ${data.trigger})`, text });
  }
}

// Streaming text is redrawn at most once per frame, whatever the delta rate.
const pendingDraws = new Map();

function scheduleDraw(message) {
  if (pendingDraws.has(message.id)) {
    return;
  }
  pendingDraws.set(
    message.id,
    requestAnimationFrame(() => {
      pendingDraws.delete(message.id);
      putMessage(message, { streaming: true });
    }),
  );
}

function cancelDraw(id) {
  const frame = pendingDraws.get(id);
  if (frame !== undefined) {
    cancelAnimationFrame(frame);
    pendingDraws.delete(id);
  }
}

/** @param {ErrorEventBody|undefined} error */
export function announceError(error) {
  if (error) {
    notify({
      kind: "error",
      title: errorTitle(error.code),
      text: error.message,
    });
  }
}

/** Drop every redraw still waiting for a frame (the stream ended; the store is re-read). */
export function cancelDraws() {
  for (const id of pendingDraws.keys()) {
    cancelDraw(id);
  }
}
