// A recall call (the model looking back with searchHistory, readHistory or
// searchConversations) drawn as one compact line instead of a tool card:
//   Looked back for “database choice” → #12, #48, #233
// Each number jumps to its message, loading its page when it is far (as the find bar
// does); a hit in another conversation opens that conversation at its message. The
// ordinary card (input and output as the model read them) stays one click away.
//
// The numbers come from the tool's output: every hit line, and every message read back,
// begins with `#<n> `; a hit in another conversation reads
// `#<n> in conversation <id> "<title>", …`.

import { app } from "./app.js";
import { h, icon } from "./dom.js";
import { state } from "./state.js";

export const RECALL_TOOLS = new Set(["searchHistory", "readHistory", "searchConversations"]);

/** How many hits the line links before it says "and N more". */
const MAX_LINKS = 8;

const HIT = /^#(\d+) /;
const OTHER = /^#(\d+) in conversation ([0-9a-f]{32}) "([^"]*)"/;

export function isRecallCall(name) {
  return RECALL_TOOLS.has(name);
}

/**
 * The hits a recall output names, in order, each once: `{index}` in this conversation,
 * `{index, conversationId, title}` in another. A readHistory output's numbers are kept
 * only within the range it asked for, so a line of a message's own text that happens to
 * start with "#5 " is not taken for a message.
 */
export function recallHits(name, input, output) {
  const hits = [];
  const seen = new Set();
  const from = Number.isInteger(input?.fromIndex) ? input.fromIndex : null;
  const to = Number.isInteger(input?.toIndex) ? input.toIndex : null;
  for (const line of String(output ?? "").split("\n")) {
    const other = name === "searchConversations" ? OTHER.exec(line) : null;
    const match = other ?? HIT.exec(line);
    if (!match) {
      continue;
    }
    const index = Number(match[1]);
    if (name === "readHistory" && from !== null && (index < from || (to !== null && index > to))) {
      continue;
    }
    const key = other ? `${other[2]}:${index}` : String(index);
    if (seen.has(key)) {
      continue;
    }
    seen.add(key);
    hits.push(other ? { index, conversationId: other[2], title: other[3] } : { index });
  }
  return hits;
}

function quoted(text) {
  const short = String(text ?? "").trim();
  return `“${short.length > 60 ? `${short.slice(0, 59)}…` : short}”`;
}

/** What the line says the model did. */
function action(name, input, running) {
  if (name === "readHistory") {
    const from = input?.fromIndex;
    const to = input?.toIndex;
    const range = Number.isInteger(from) ? (to !== from ? `#${from}–#${to}` : `#${from}`) : "";
    const where = input?.conversationId ? " of another conversation" : "";
    return `${running ? "Reading back" : "Read back"} ${range}${where}`.trim();
  }
  const verb = running ? "Looking back" : "Looked back";
  const where = name === "searchConversations" ? " in other conversations" : "";
  return `${verb}${where} for ${quoted(input?.query)}`;
}

/** Show a message of the open conversation: on the loaded page, or by loading its page. */
async function jumpTo(index) {
  const element = document.querySelector(`.chat-inner .message[data-index="${index}"]`);
  if (!element) {
    await app.open(state.currentId, { at: index });
    return;
  }
  for (const marked of document.querySelectorAll(".chat-inner .message.search-hit")) {
    marked.classList.remove("search-hit");
  }
  element.classList.add("search-hit");
  element.scrollIntoView({ block: "center" });
}

function hitLink(hit, readConversation) {
  const conversationId = hit.conversationId ?? readConversation;
  const label = `#${hit.index}`;
  const title = conversationId
    ? `Open ${hit.title ? `“${hit.title}”` : "that conversation"} at message ${label}`
    : `Show message ${label}`;
  return h("button", {
    type: "button",
    class: ["recall-hit", conversationId && "other"],
    text: conversationId && hit.title ? `${hit.title} ${label}` : label,
    title,
    "aria-label": title,
    dataset: { index: String(hit.index), conversationId: conversationId ?? "" },
    on: {
      click: () =>
        conversationId && conversationId !== state.currentId
          ? app.open(conversationId, { at: hit.index })
          : jumpTo(hit.index),
    },
  });
}

/**
 * The compact line of a recall call, with `card` (the ordinary tool card) under it,
 * hidden until "output" is pressed.
 */
export function renderRecallLine({ call, result, running = false }, card) {
  const name = call?.name ?? result?.name ?? "";
  const input = call?.input ?? {};
  const waiting = running && !result;
  const children = [icon(waiting ? "loader" : "search", waiting ? "small spin" : "small")];
  children.push(h("span", { class: "recall-action", text: action(name, input, waiting) }));
  if (result?.isError) {
    children.push(h("span", { class: "recall-outcome error", text: "→ refused" }));
  } else if (result) {
    const hits = recallHits(name, input, result.output);
    if (!hits.length) {
      children.push(h("span", { class: "recall-outcome", text: "→ nothing found" }));
    } else {
      const links = h("span", { class: "recall-hits" }, h("span", { text: "→" }));
      const shown = hits.slice(0, MAX_LINKS);
      const more = hits.length - shown.length;
      shown.forEach((hit, i) => {
        // "#12, #48, #233": the comma stays with its number when the line wraps.
        const last = i === shown.length - 1 && !more;
        links.append(h("span", {}, hitLink(hit, input.conversationId), last ? "" : ","));
      });
      if (more) {
        links.append(h("span", { class: "recall-more", text: `and ${more} more` }));
      }
      children.push(links);
    }
  }
  card.hidden = !card.open;
  const toggle = h("button", {
    type: "button",
    class: "recall-toggle",
    text: "output",
    title: "What the tool returned to the model",
    "aria-expanded": String(!card.hidden),
    on: {
      click: () => {
        card.hidden = !card.hidden;
        card.open = !card.hidden;
        toggle.setAttribute("aria-expanded", String(!card.hidden));
      },
    },
  });
  children.push(toggle);
  return h(
    "div",
    { class: ["recall-call", result?.isError && "error"] },
    h("div", { class: "recall-line", role: "group", "aria-label": "Recall" }, children),
    card,
  );
}
