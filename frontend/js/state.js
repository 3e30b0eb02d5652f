// The app's shared state and a tiny publish/subscribe bus.
//
// Views own their DOM; they read from `state` and announce changes through `emit`, so no
// view has to know which other views care. Topics:
//   conversations   the sidebar list changed
//   conversation    the open conversation (or its metadata) changed
//   context         new context numbers (tokens, budget, breakdown, thresholds)
//   compactions     the fold versions changed (a fold, an undo, a reload)
//   busy            a turn or a fold started or ended
//   settings        the settings were loaded or saved
//   pins            a message was pinned or unpinned

export const state = {
  /** Conversations for the sidebar, newest first. */
  conversations: [],
  /** The search text of the sidebar. */
  query: "",
  /** Id of the open conversation, or null for the empty start screen. */
  currentId: null,
  /** The open conversation as the server returned it. @type {ConversationOut|null} */
  conversation: null,
  /** The last `/context` body, `context.stats` events merged in. @type {ContextOut|null} */
  context: null,
  /** Every fold version of the open conversation, oldest first. */
  compactions: [],
  /** What is running: null, "turn" or "compact". */
  busy: null,
  /** The settings as GET /api/settings returned them. @type {SettingsOut|null} */
  settings: null,
  /** The projects, by name. @type {ProjectOut[]} */
  projects: [],
  /** The project a new conversation is started in ("+" on a project), or null. */
  draftProjectId: null,
  /** The model (and the provider serving it) the next new conversation is created with,
   * chosen on the start screen; null: the defaults. */
  draftModel: null,
};

const listeners = new Map();

export function on(topic, listener) {
  if (!listeners.has(topic)) {
    listeners.set(topic, new Set());
  }
  listeners.get(topic).add(listener);
  return () => listeners.get(topic).delete(listener);
}

export function emit(topic, payload) {
  for (const listener of listeners.get(topic) ?? []) {
    try {
      listener(payload);
    } catch (error) {
      console.error(`listener for ${topic} failed`, error);
    }
  }
}

export function setBusy(value) {
  state.busy = value;
  document.getElementById("app")?.setAttribute("data-busy", value ?? "");
  emit("busy", value);
}

/** The current fold version (the one the model's view is built from), or null. */
export function currentFold() {
  return state.conversation?.compaction ?? state.context?.compaction ?? null;
}

/** Where the model's view begins in the display history. */
export function apiStartIndex() {
  return currentFold()?.apiStartIndex ?? 0;
}
