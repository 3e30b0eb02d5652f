// A new conversation's title: shown at once from its first message, then replaced by the
// short title the summarizer writes in the background after the first exchange.

import { api } from "./api.js";
import { state, update } from "./state.js";

const DEFAULT_TITLE = "New conversation";

/**
 * Show a new conversation's title at once: the server names it after its first message
 * when the message arrives (the same rule as here). Returns the title, or null when the
 * conversation already had messages or a name.
 */
export function nameIfNew(id, content) {
  const conversation = state.conversation;
  if (!conversation || conversation.id !== id || conversation.messageCount > 0) {
    return null;
  }
  if (conversation.title && conversation.title !== DEFAULT_TITLE) {
    return null;
  }
  const firstLine = content.trim().split("\n")[0].replace(/\s+/g, " ");
  const title = firstLine.length > 60 ? `${firstLine.slice(0, 57).trimEnd()}…` : firstLine;
  if (!title) {
    return null;
  }
  update({ conversation: { ...conversation, title, messageCount: 1 } });
  return title;
}

/** Seconds after a first exchange at which the conversation is re-read for its title. */
const TITLE_CHECKS_MS = [1000, 2000, 4000, 8000, 15000];

/**
 * After the first exchange the summarizer writes a short title in the background, after
 * the turn's `done`; re-read the conversation a few times until it has arrived (or the
 * setting is off, the summarizer failed, or the person renamed it: then nothing changes).
 */
export async function watchForMadeTitle(id, firstTitle, refreshList) {
  for (const delay of TITLE_CHECKS_MS) {
    await new Promise((resolve) => setTimeout(resolve, delay));
    let conversation;
    try {
      conversation = await api.getConversation(id);
    } catch {
      return; // deleted meanwhile, or the server is gone: the next list refresh tells
    }
    if (conversation.title !== firstTitle) {
      if (state.conversation?.id === id) {
        update({ conversation: { ...state.conversation, title: conversation.title } });
      }
      await refreshList();
      return;
    }
  }
}
