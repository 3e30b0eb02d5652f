// The find bar (Ctrl/Cmd+F): finds words in the whole open conversation, not only in the
// loaded page. The server searches every message (GET …/search, the other versions too
// when asked); the bar says "k of n" and each step shows its message, loading its page
// (or its version) when it is not on screen, with the words marked.

import { api } from "./api.js";
import { app } from "./app.js";
import { byId, h, icon, markTerms, searchTerms } from "./dom.js";
import { state } from "./state.js";

const find = { hits: [], at: -1, query: "", request: 0, timer: null };

function bar() {
  return byId("find-bar");
}

export function initFind() {
  const input = h("input", {
    class: "input",
    id: "find-input",
    type: "search",
    placeholder: "Find in this conversation",
    "aria-label": "Find in this conversation",
    autocomplete: "off",
  });
  const count = h("span", { class: "find-count", id: "find-count", "aria-live": "polite" });
  const branches = h("input", { type: "checkbox", id: "find-branches" });
  const button = (label, glyph, id, run) =>
    h(
      "button",
      {
        type: "button",
        class: "icon-button",
        id,
        title: label,
        "aria-label": label,
        on: { click: run },
      },
      icon(glyph, "small"),
    );
  const element = h(
    "div",
    { class: "find-bar", id: "find-bar", role: "search", hidden: true },
    icon("search", "small"),
    input,
    count,
    button("Previous match", "chevron-down", "find-previous", () => step(-1)),
    button("Next match", "chevron-down", "find-next", () => step(1)),
    h("label", { class: "find-branches" }, branches, h("span", { text: "other versions" })),
    button("Close find", "x", "find-close", closeFind),
  );
  byId("chat").prepend(element);
  input.addEventListener("input", () => {
    clearTimeout(find.timer);
    find.timer = setTimeout(() => run(input.value), 200);
  });
  branches.addEventListener("change", () => run(input.value));
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      clearTimeout(find.timer);
      if (input.value !== find.query) {
        run(input.value);
      } else {
        step(event.shiftKey ? -1 : 1);
      }
    } else if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      closeFind();
    }
  });
  document.addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && (event.key === "f" || event.key === "F")) {
      if (state.currentId && !document.querySelector("dialog[open]")) {
        event.preventDefault();
        openFind();
      }
    }
  });
}

export function openFind() {
  const element = bar();
  element.hidden = false;
  const input = byId("find-input", HTMLInputElement);
  input.focus();
  input.select();
}

export function closeFind() {
  bar().hidden = true;
  clearMarks();
  find.hits = [];
  find.at = -1;
  find.query = "";
  byId("find-count").textContent = "";
  byId("composer-input").focus();
}

function clearMarks() {
  const marked = document.querySelectorAll(".chat-inner .find-hit, .chat-inner .search-hit");
  for (const element of marked) {
    element.classList.remove("find-hit", "search-hit");
    for (const mark of element.querySelectorAll("mark")) {
      mark.replaceWith(mark.textContent);
    }
    element.normalize();
  }
}

async function run(query) {
  const id = state.currentId;
  const request = ++find.request;
  find.query = query;
  const terms = searchTerms(query);
  const count = byId("find-count");
  if (!id || !terms.length) {
    find.hits = [];
    count.textContent = "";
    clearMarks();
    return;
  }
  try {
    const result = await api.find(id, query, byId("find-branches", HTMLInputElement).checked);
    if (request !== find.request) {
      return;
    }
    find.hits = result.items;
  } catch (error) {
    count.textContent = error.message;
    return;
  }
  find.at = -1;
  if (!find.hits.length) {
    count.textContent = "No matches";
    clearMarks();
    return;
  }
  await step(1);
}

async function step(direction) {
  if (!find.hits.length) {
    return;
  }
  find.at = (find.at + direction + find.hits.length) % find.hits.length;
  const hit = find.hits[find.at];
  byId("find-count").textContent = `${find.at + 1} of ${find.hits.length}`;
  const terms = searchTerms(find.query);
  clearMarks();
  let element = hit.onActivePath
    ? /** @type {HTMLElement|null} */ (
        document.querySelector(`.chat-inner .message[data-index="${hit.index}"]`)
      )
    : null;
  if (element?.dataset.id !== hit.messageId) {
    // Not on the loaded page (or another version): open there (which marks the words),
    // then come back to the bar.
    const opening = { at: hit.index, terms };
    const branch = hit.onActivePath ? {} : { branchOf: hit.messageId };
    await app.open(state.currentId, { ...opening, ...branch });
    byId("find-input").focus();
    document
      .querySelector(`.chat-inner .message[data-index="${hit.index}"]`)
      ?.classList.add("find-hit");
    return;
  }
  element.classList.add("find-hit");
  markTerms(element, terms);
  element.scrollIntoView({ block: "center" });
}
