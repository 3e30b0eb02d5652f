// The app's shared state and a tiny publish/subscribe bus.
//
// Views own their DOM; they read from `state` and learn of changes through `on`, so no
// view has to know which other views care. `update` is the one way to change the state:
// it writes and announces in one call, so no write can forget to tell the views (`state`
// is typed read-only for the other modules, and `tsc --checkJs` refuses a direct write).
// Topics, each announced with the new value:
//   conversations   the sidebar list changed
//   conversation    the open conversation (or its metadata) changed
//   context         new context numbers (tokens, budget, breakdown, thresholds)
//   compactions     the fold versions changed (a fold, an undo, a reload)
//   pins            a message was pinned or unpinned
//   busy            a turn or a fold started or ended
//   settings        the settings were loaded or saved
// Two more are announced with `emit` alone, as they change nothing stored here:
// "settings-closed" (the Settings dialog closed) and "conversations" again when the list
// must be drawn anew (a project group folded or unfolded).

/**
 * The model (and the provider serving it) a new conversation is created with.
 * @typedef {Object} DraftModel
 * @property {string} model
 * @property {string|null} [provider]
 */

/**
 * @typedef {Object} AppState
 * @property {ConversationOut[]} conversations Conversations for the sidebar, newest first.
 * @property {string} query The search text of the sidebar.
 * @property {string|null} currentId Id of the open conversation, or null for the empty
 *   start screen.
 * @property {ConversationOut|null} conversation The open conversation as the server
 *   returned it.
 * @property {ContextOut|null} context The last `/context` body, `context.stats` events
 *   merged in.
 * @property {CompactionVersionOut[]} compactions Every fold version of the open
 *   conversation, oldest first.
 * @property {"turn"|"compact"|null} busy What is running.
 * @property {SettingsOut|null} settings The settings as GET /api/settings returned them.
 * @property {ProjectOut[]} projects The projects, by name.
 * @property {string|null} draftProjectId The project a new conversation is started in
 *   ("+" on a project), or null.
 * @property {DraftModel|null} draftModel The model the next new conversation is created
 *   with, chosen on the start screen; null: the defaults.
 */

/**
 * What `update` takes: fields of the state, and two parts of the open conversation that
 * have topics of their own.
 * @typedef {Partial<AppState> & {
 *   compaction?: CompactionOut|null,
 *   pins?: PinOut[],
 * }} StateChange
 */

/** @type {AppState} */
const fields = {
  conversations: [],
  query: "",
  currentId: null,
  conversation: null,
  context: null,
  compactions: [],
  busy: null,
  settings: null,
  projects: [],
  draftProjectId: null,
  draftModel: null,
};

/** The state, to read; `update` changes it. @type {Readonly<AppState>} */
export const state = fields;

/**
 * The topic that announces each key of a change, in the order topics are announced. The
 * open conversation's current fold (`compaction`) and its `pins` are parts of it with
 * topics of their own: a fold or a pin is not a new conversation to those who listen for
 * one (the meter starts learning a turn's growth afresh on "conversation", the tool cards
 * ask the server again). Fields no view listens for (the search text, the open id, the
 * draft's project and model, the projects) have no topic.
 */
const TOPICS = [
  ["conversations", "conversations"],
  ["conversation", "conversation"],
  ["context", "context"],
  ["compactions", "compactions"],
  ["compaction", "compactions"],
  ["pins", "pins"],
  ["busy", "busy"],
  ["settings", "settings"],
];

/** What each topic's listeners are given. */
const PAYLOADS = {
  conversations: () => fields.conversations,
  conversation: () => fields.conversation,
  context: () => fields.context,
  compactions: () => fields.compactions,
  pins: () => fields.conversation?.pins ?? [],
  busy: () => fields.busy,
  settings: () => fields.settings,
};

/**
 * Change the state and announce it: every key of `changes` is written, then each topic
 * they belong to is announced once (in the order of `TOPICS`), with its new value.
 * `compaction` is the open conversation's current fold and `pins` its pins; with no
 * conversation open they are not kept.
 * @param {StateChange} changes
 */
export function update(changes) {
  const { compaction, pins, ...own } = changes;
  Object.assign(fields, own);
  if (fields.conversation && compaction !== undefined) {
    fields.conversation = { ...fields.conversation, compaction };
  }
  if (fields.conversation && pins !== undefined) {
    fields.conversation = { ...fields.conversation, pins };
  }
  const topics = new Set(TOPICS.filter(([key]) => key in changes).map(([, topic]) => topic));
  for (const topic of topics) {
    emit(topic, PAYLOADS[topic]());
  }
}

/** @type {Map<string, Set<(payload: any) => void>>} */
const listeners = new Map();

/**
 * Call `listener` with the payload of every announcement of `topic`; returns how to stop.
 * @param {string} topic
 * @param {(payload: any) => void} listener
 */
export function on(topic, listener) {
  if (!listeners.has(topic)) {
    listeners.set(topic, new Set());
  }
  listeners.get(topic).add(listener);
  return () => listeners.get(topic).delete(listener);
}

/**
 * Announce `topic` without changing the state (see the topics above); `update` announces
 * every change it makes.
 * @param {string} topic
 * @param {any} [payload]
 */
export function emit(topic, payload) {
  for (const listener of listeners.get(topic) ?? []) {
    try {
      listener(payload);
    } catch (error) {
      console.error(`listener for ${topic} failed`, error);
    }
  }
}

/**
 * A turn or a fold started ("turn", "compact") or ended (null); the page's `data-busy`
 * says it too (the styles and the browser tests read it).
 * @param {"turn"|"compact"|null} value
 */
export function setBusy(value) {
  document.getElementById("app")?.setAttribute("data-busy", value ?? "");
  update({ busy: value });
}

/** The current fold version (the one the model's view is built from), or null. */
export function currentFold() {
  return state.conversation?.compaction ?? state.context?.compaction ?? null;
}

/** Where the model's view begins in the display history. */
export function apiStartIndex() {
  return currentFold()?.apiStartIndex ?? 0;
}
