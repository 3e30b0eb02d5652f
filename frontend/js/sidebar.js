// The sidebar: conversations newest first, grouped by project (projects.js) and by day,
// with search, rename and delete.

import { api } from "./api.js";
import { app } from "./app.js";
import { confirmDialog } from "./dialog.js";
import { byId, h, icon, markTerms, searchTerms } from "./dom.js";
import { dayGroup, formatWhen, plural } from "./format.js";
import { notifyError } from "./notices.js";
import { loadProjects, makeDraggable, moveButton, projectGroups } from "./projects.js";
import { on, state, update } from "./state.js";

let searchTimer = 0;
let requestNumber = 0;

export function initSidebar() {
  const search = byId("search", HTMLInputElement);
  search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => {
      update({ query: search.value.trim() });
      refreshList();
    }, 180);
  });
  search.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && search.value) {
      event.stopPropagation();
      search.value = "";
      update({ query: "" });
      refreshList();
    }
  });
  byId("new-conversation").addEventListener("click", () => app.startDraft());
  on("conversations", render);
  on("conversation", render);
}

/** Reload the list (with the current search) from the server. */
export async function refreshList() {
  const mine = ++requestNumber;
  try {
    const [items] = await Promise.all([api.listConversations(state.query), loadProjects()]);
    if (mine !== requestNumber) {
      return;
    }
    update({ conversations: items });
  } catch (error) {
    notifyError("Could not load the conversations", error);
  }
}

function render() {
  const list = byId("conversation-list");
  const items = state.conversations;
  if (!items.length && !(state.projects.length && !state.query)) {
    list.replaceChildren(
      h("div", {
        class: "list-empty",
        text: state.query ? `Nothing matches “${state.query}”.` : "No conversations yet.",
      }),
    );
    return;
  }
  list.replaceChildren(...projectGroups(items, renderItem, byDay));
}

/** @param {ConversationOut[]} items */
function byDay(items) {
  const children = [];
  let group = null;
  for (const conversation of items) {
    const label = state.query ? "Results" : dayGroup(conversation.updatedAt);
    if (label !== group) {
      group = label;
      children.push(h("div", { class: "list-group", text: label }));
    }
    children.push(renderItem(conversation));
  }
  return children;
}

/**
 * A search result's matching text, with the terms marked.
 * @param {ConversationOut} conversation
 */
function snippetOf(conversation) {
  const hit = conversation.searchHit;
  if (!state.query || !hit?.snippet) {
    return null;
  }
  const element = h("span", { class: "item-snippet", text: hit.snippet });
  markTerms(element, searchTerms(state.query));
  const more = (hit.matchCount ?? 1) - 1;
  if (hit.onActivePath === false) {
    // The match is in a version of a message that is not the one on screen.
    element.prepend(h("span", { class: "badge other-version", text: "other version" }), " ");
  }
  // The snippet shows the newest match; the find bar (Ctrl+F) walks through the others.
  return more > 0
    ? [
        element,
        h("span", { class: "more-matches", text: plural(more, "more match", "more matches") }),
      ]
    : element;
}

/**
 * A search result opens at its match, highlighted (on the match's own branch when it is
 * in another version); otherwise at the newest message.
 * @param {ConversationOut} conversation
 */
function openingOf(conversation) {
  const hit = conversation.searchHit;
  if (!state.query || !hit) {
    return {};
  }
  const opening = { at: hit.index, terms: searchTerms(state.query) };
  return hit.onActivePath === false ? { ...opening, branchOf: hit.messageId } : opening;
}

/** @param {ConversationOut} conversation */
function renderItem(conversation) {
  const active = conversation.id === state.currentId;
  const title = (active ? state.conversation?.title : null) ?? conversation.title;
  // The count is the shown path's; a shorter path after an edit is not a loss.
  const count = plural(conversation.messageCount, "message");
  const meta = [
    formatWhen(conversation.updatedAt),
    conversation.hasOtherVersions ? `${count} (other versions too)` : count,
  ]
    .filter(Boolean)
    .join(" · ");
  const item = h(
    "div",
    {
      class: ["conversation-item", active && "active"],
      role: "button",
      tabindex: "0",
      "aria-current": active ? "true" : null,
      dataset: { id: conversation.id },
    },
    h(
      "span",
      { class: "item-text" },
      h("span", { class: "item-title", text: title || "Untitled" }),
      h("span", { class: "item-meta", text: meta }),
      snippetOf(conversation),
    ),
    h(
      "span",
      { class: "item-actions" },
      moveButton(conversation),
      h(
        "button",
        {
          type: "button",
          class: "icon-button rename",
          title: "Rename",
          "aria-label": "Rename",
          on: {
            click: (event) => {
              event.stopPropagation();
              startRename(item, conversation);
            },
          },
        },
        icon("pencil", "small"),
      ),
      h(
        "button",
        {
          type: "button",
          class: "icon-button delete",
          title: "Delete",
          "aria-label": "Delete",
          on: {
            click: (event) => {
              event.stopPropagation();
              deleteConversation(conversation);
            },
          },
        },
        icon("trash-2", "small"),
      ),
    ),
  );
  makeDraggable(item, conversation);
  const open = () => app.open(conversation.id, openingOf(conversation));
  item.addEventListener("click", open);
  item.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && event.target === item) {
      open();
    }
  });
  return item;
}

/**
 * Rename in place: the title becomes an input; Enter saves, Esc cancels.
 * @param {ConversationOut} conversation
 */
function startRename(item, conversation) {
  const text = item.querySelector(".item-text");
  const input = h("input", {
    class: "rename-input",
    type: "text",
    "aria-label": "New title",
    ".value": conversation.title,
  });
  let done = false;
  const finish = async (save) => {
    if (done) {
      return;
    }
    done = true;
    const title = input.value.trim();
    if (save && title && title !== conversation.title) {
      await renameConversation(conversation.id, title);
    } else {
      render();
    }
  };
  input.addEventListener("keydown", (event) => {
    event.stopPropagation();
    if (event.key === "Enter") {
      finish(true);
    } else if (event.key === "Escape") {
      finish(false);
    }
  });
  input.addEventListener("click", (event) => event.stopPropagation());
  input.addEventListener("blur", () => finish(true));
  text.replaceChildren(input);
  input.focus();
  input.select();
}

export async function renameConversation(id, title) {
  try {
    const updated = await api.updateConversation(id, { title });
    if (state.conversation?.id === id) {
      update({ conversation: { ...state.conversation, ...updated } });
    }
    await refreshList();
  } catch (error) {
    notifyError("Could not rename the conversation", error);
    render();
  }
}

/** @param {ConversationOut} conversation */
export async function deleteConversation(conversation) {
  const confirmed = await confirmDialog({
    title: "Delete this conversation?",
    text: `“${conversation.title || "Untitled"}” and its whole history, folds included, will be deleted. This cannot be undone; export it first to keep a copy.`,
    confirmLabel: "Delete",
    danger: true,
  });
  if (!confirmed) {
    return;
  }
  try {
    await api.deleteConversation(conversation.id);
    await refreshList();
    app.conversationDeleted(conversation.id);
  } catch (error) {
    notifyError("Could not delete the conversation", error);
  }
}
