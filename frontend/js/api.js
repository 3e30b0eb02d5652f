// The HTTP API (docs/api.md): authenticated fetch, JSON helpers, SSE streams.
//
// Every /api route but /api/health needs `Authorization: Bearer <token>`. The token comes
// from the URL fragment (`#token=...`, never sent to the server in a request line or
// logged), or is injected by the desktop shell as `window.FOLDLINE_TOKEN`; it is kept in
// sessionStorage so a reload keeps working, and removed from the address bar at once.

import { readEvents } from "./sse.js";

const TOKEN_KEY = "foldline.token";
let token = "";

export function initToken() {
  const fragment = new URLSearchParams(window.location.hash.slice(1));
  const fromFragment = fragment.get("token");
  if (fromFragment) {
    sessionStorage.setItem(TOKEN_KEY, fromFragment);
    fragment.delete("token");
    const rest = fragment.toString();
    const url = window.location.pathname + window.location.search + (rest ? `#${rest}` : "");
    window.history.replaceState(null, "", url);
  }
  /**
   * The desktop shell's injected token, when the page runs in its window.
   * @type {string|undefined}
   */
  const injected = /** @type {any} */ (window).FOLDLINE_TOKEN;
  token = fromFragment || injected || sessionStorage.getItem(TOKEN_KEY) || "";
  return token !== "";
}

/** An API failure with the server's code and a message fit to show a person. */
export class ApiError extends Error {
  /**
   * @param {string} message
   * @param {{status?: number, code?: string}} [details]
   */
  constructor(message, { status = 0, code = "" } = {}) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

function describeStatus(status) {
  if (status === 401 || status === 403) {
    return "The app's access token was refused. Reopen Foldline from its window or the link it printed.";
  }
  if (status === 404) {
    return "Not found. It may have been deleted.";
  }
  if (status === 409) {
    return "Something else changed this conversation at the same time. Try again.";
  }
  if (status >= 500) {
    return `The Foldline server failed (HTTP ${status}).`;
  }
  return `The request failed (HTTP ${status}).`;
}

/**
 * The server's error (every failure answers an ErrorBody, `{error: {code, message}}`) as
 * an ApiError; a body that is not one (a proxy's page, a cut connection) gets a message
 * from the status.
 */
async function errorFrom(response) {
  /** @type {ErrorBody|null} */
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  const error = body?.error;
  return new ApiError(error?.message || describeStatus(response.status), {
    status: response.status,
    code: error?.code ?? "",
  });
}

/**
 * This page's own name, sent with every request: the watch stream says which page made
 * each change, so a page skips its own and redraws for everyone else's (watch.js).
 */
export const pageId =
  globalThis.crypto?.randomUUID?.() ?? `page-${Math.random().toString(36).slice(2)}`;

/** @param {Record<string, string>} extra @returns {Record<string, string>} */
function headers(extra = {}) {
  /** @type {Record<string, string>} */
  const result = { ...extra, "X-Foldline-Page": pageId };
  if (token) {
    result.Authorization = `Bearer ${token}`;
  }
  return result;
}

/**
 * What a request sends: a JSON `body`, `query` parameters (empty ones left out), a signal
 * to abort it, and the `accept`ed type.
 * @typedef {Object} RequestOptions
 * @property {unknown} [body]
 * @property {Record<string, string|number|boolean|null|undefined>} [query]
 * @property {AbortSignal} [signal]
 * @property {string} [accept]
 */

/**
 * @param {string} method
 * @param {string} path
 * @param {RequestOptions} [options]
 * @returns {Promise<Response>}
 */
async function send(method, path, { body, query, signal, accept = "application/json" } = {}) {
  let url = path;
  if (query) {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) {
      if (value !== undefined && value !== null && value !== "") {
        params.set(key, String(value));
      }
    }
    const text = params.toString();
    if (text) {
      url += `?${text}`;
    }
  }
  /** @type {RequestInit & {headers: Record<string, string>}} */
  const init = { method, headers: headers({ Accept: accept }), signal };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (error) {
    if (error.name === "AbortError") {
      throw error;
    }
    throw new ApiError("Cannot reach the Foldline server. Is it still running?", {
      code: "network",
    });
  }
  if (!response.ok) {
    throw await errorFrom(response);
  }
  return response;
}

/**
 * @param {string} method
 * @param {string} path
 * @param {RequestOptions} [options]
 * @returns {Promise<any>} the answer's JSON (typed by each call below)
 */
async function json(method, path, options) {
  const response = await send(method, path, options);
  if (response.status === 204) {
    return null;
  }
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

/**
 * POST a body; once the server accepted it, return an async iterator of the `{name, data}`
 * events of its `text/event-stream` answer. A refusal (409, 400, ...) throws here, before
 * any event, so callers can tell "not started" from "failed midway".
 * @param {string} path
 * @param {unknown} body
 * @param {AbortSignal} signal
 */
async function stream(path, body, signal) {
  const response = await send("POST", path, { body, signal, accept: "text/event-stream" });
  if (!response.body) {
    throw new ApiError("The server answered without a stream.");
  }
  return turnEvents(response.body);
}

/**
 * A turn's or a fold's events: their names and bodies are the server's `EVENT_BODIES`
 * (types.js `StreamEvent`), which the SSE reader itself does not know of.
 * @param {ReadableStream} body
 * @returns {AsyncGenerator<StreamEvent>}
 */
function turnEvents(body) {
  return /** @type {AsyncGenerator<StreamEvent>} */ (readEvents(body));
}

const enc = encodeURIComponent;

export const api = {
  health: () => json("GET", "/api/health"),

  /** @returns {Promise<ConversationOut[]>} */
  listConversations: async (q = "", projectId = "") =>
    (await json("GET", "/api/conversations", { query: { q, projectId } })).items,
  /** @returns {Promise<ConversationOut>} */
  createConversation: (fields = {}) => json("POST", "/api/conversations", { body: fields }),
  /** @returns {Promise<ConversationOut>} */
  getConversation: (id) => json("GET", `/api/conversations/${enc(id)}`),
  /** @returns {Promise<ConversationOut>} */
  updateConversation: (id, fields) =>
    json("PATCH", `/api/conversations/${enc(id)}`, { body: fields }),
  deleteConversation: (id) => json("DELETE", `/api/conversations/${enc(id)}`),

  /**
   * A page of the display history from `offset` (with `newest`: its last `limit`
   * messages), as `{messages, total}`.
   */
  listMessages: async (id, { offset = 0, limit, newest = false }) => {
    /** @type {MessagePage} */
    const page = await json("GET", `/api/conversations/${enc(id)}/messages`, {
      query: newest ? { limit, newest } : { offset, limit },
    });
    return { messages: page.items, total: page.total };
  },
  /** The untruncated output of tool-result part `partIndex` of a message. */
  fullOutput: (id, messageId, partIndex) =>
    json(
      "GET",
      `/api/conversations/${enc(id)}/messages/${enc(messageId)}/parts/${enc(partIndex)}/full`,
    ),

  /**
   * "New conversation from here": `{messageId, keepLast, instructions}` -> the new one.
   * @returns {Promise<ConversationOut>}
   */
  handOff: (id, body) => json("POST", `/api/conversations/${enc(id)}/handoff`, { body }),
  /**
   * Pin or unpin a message: `{pins, pinnedTokens, capTokens}`; 422 over the cap.
   * @returns {Promise<PinsOut>}
   */
  pinMessage: (id, messageId) =>
    json("POST", `/api/conversations/${enc(id)}/messages/${enc(messageId)}/pin`),
  /** @returns {Promise<PinsOut>} */
  unpinMessage: (id, messageId) =>
    json("DELETE", `/api/conversations/${enc(id)}/messages/${enc(messageId)}/pin`),

  /**
   * The text and its files (`[{name, mediaType, dataBase64}]`), then the answer: SSE.
   * @returns {Promise<AsyncGenerator<StreamEvent>>}
   */
  sendMessage: (id, content, signal, attachments = []) =>
    stream(`/api/conversations/${enc(id)}/messages`, { content, attachments }, signal),
  /**
   * A new version of the person's message `messageId` (a sibling), then its answer: SSE.
   * `keepAttachments` are the sha256s of the old version's files that stay.
   * @returns {Promise<AsyncGenerator<StreamEvent>>}
   */
  editMessage: (id, messageId, content, signal, attachments = [], keepAttachments = []) =>
    stream(
      `/api/conversations/${enc(id)}/messages/${enc(messageId)}/edit`,
      { content, attachments, keepAttachments },
      signal,
    ),
  /** A file of the conversation (its bytes, as a Blob). */
  attachment: async (id, sha256) => {
    const path = `/api/conversations/${enc(id)}/attachments/${enc(sha256)}`;
    return (await send("GET", path, { accept: "*/*" })).blob();
  },
  /**
   * A new version of the answer `messageId` (a sibling with the same parent): SSE.
   * @returns {Promise<AsyncGenerator<StreamEvent>>}
   */
  regenerate: (id, messageId, signal) =>
    stream(
      `/api/conversations/${enc(id)}/messages/${enc(messageId)}/regenerate`,
      undefined,
      signal,
    ),
  /**
   * What editing `messageId` would do to the model's view: `{folded, foldsKept,
   * foldsDropped, viewTokens, contextWindow}`.
   * @returns {Promise<EditPreview>}
   */
  editPreview: (id, messageId) =>
    json("GET", `/api/conversations/${enc(id)}/messages/${enc(messageId)}/edit-preview`),
  /**
   * Show the branch of `messageId` (where it was last left): the conversation.
   * @returns {Promise<ConversationOut>}
   */
  setActiveLeaf: (id, messageId) =>
    json("PUT", `/api/conversations/${enc(id)}/active-leaf`, { body: { messageId } }),
  /**
   * Run the model again on the history as it is (after an error), without a new message.
   * @returns {Promise<AsyncGenerator<StreamEvent>>}
   */
  retry: (id, signal) => stream(`/api/conversations/${enc(id)}/retry`, undefined, signal),
  /** @returns {Promise<CancelResult>} */
  cancel: (id) => json("POST", `/api/conversations/${enc(id)}/cancel`, { body: {} }),
  /**
   * The running turn's events from its start, then live; an empty stream when idle.
   * @returns {Promise<AsyncGenerator<StreamEvent>>}
   */
  events: async (id, signal) => {
    const path = `/api/conversations/${enc(id)}/events`;
    const response = await send("GET", path, { signal, accept: "text/event-stream" });
    return turnEvents(response.body);
  },
  /** Stays open: the conversation's turns and changes, made anywhere (watch.js); with
   * `id` null, the list's changes. */
  watch: async (id, signal) => {
    // No conversation shown: the list alone.
    const path = id === null ? "/api/watch" : `/api/conversations/${enc(id)}/watch`;
    const response = await send("GET", path, { signal, accept: "text/event-stream" });
    return readEvents(response.body);
  },
  /**
   * `keepRecentTokens` left out: everything before the last exchange folds.
   * @returns {Promise<AsyncGenerator<StreamEvent>>}
   */
  compact: (id, instructions, signal, keepRecentTokens) =>
    stream(
      `/api/conversations/${enc(id)}/compact`,
      {
        ...(instructions ? { instructions } : {}),
        ...(keepRecentTokens ? { keepRecentTokens } : {}),
      },
      signal,
    ),

  /**
   * What the model sees now. `messages: false` leaves out the view's messages (the meter
   * needs only the numbers; the messages can be megabytes on a long conversation).
   * `model` counts the view for another model: what switching to it would show.
   * @returns {Promise<ContextOut>}
   */
  context: (id, { messages = true, model = undefined, provider = undefined } = {}) =>
    json("GET", `/api/conversations/${enc(id)}/context`, {
      query: { messages: messages ? undefined : "false", model, provider },
    }),
  /** @returns {Promise<CompactionVersionOut[]>} every fold version, oldest first */
  compactions: async (id) => (await json("GET", `/api/conversations/${enc(id)}/compactions`)).items,
  /**
   * Every message matching `q` in display order (other versions with `branches`).
   * @returns {Promise<FindResult>}
   */
  find: (id, q, branches) =>
    json(
      "GET",
      `/api/conversations/${enc(id)}/search?q=${encodeURIComponent(q)}${branches ? "&branches=true" : ""}`,
    ),
  /**
   * The whole list: `{items, currentVersion, redoVersion}`.
   * @returns {Promise<CompactionList>}
   */
  compactionList: (id) => json("GET", `/api/conversations/${enc(id)}/compactions`),
  /**
   * Make an undone fold current again (no model call) → the Compaction.
   * @returns {Promise<CompactionOut>}
   */
  redoCompaction: (id, version) =>
    json("POST", `/api/conversations/${enc(id)}/compactions/${enc(version)}/redo`, { body: {} }),
  /** @returns {Promise<CompactionPreview>} */
  compactionPreview: (id, keepRecentTokens) =>
    json("GET", `/api/conversations/${enc(id)}/compactions/preview`, {
      query: keepRecentTokens ? { keepRecentTokens: String(keepRecentTokens) } : undefined,
    }),
  /** @returns {Promise<UndoResult>} */
  undoCompaction: (id, version) =>
    json("POST", `/api/conversations/${enc(id)}/compactions/${enc(version)}/undo`, { body: {} }),

  /** The export as a Blob with the file name the server suggests. */
  exportConversation: async (id, format) => {
    const response = await send("GET", `/api/conversations/${enc(id)}/export`, {
      query: { format },
      accept: "*/*",
    });
    const disposition = response.headers.get("Content-Disposition") || "";
    const match = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(disposition);
    const fallback = `conversation.${format === "json" ? "json" : "md"}`;
    const filename = match ? decodeURIComponent(match[1]) : fallback;
    return { blob: await response.blob(), filename };
  },
  importConversation: (document) => json("POST", "/api/conversations/import", { body: document }),

  /** @returns {Promise<ProjectOut[]>} */
  listProjects: async () => (await json("GET", "/api/projects")).items,
  /** @returns {Promise<ProjectOut>} */
  getProject: (id) => json("GET", `/api/projects/${enc(id)}`),
  /** @returns {Promise<ProjectOut>} */
  createProject: (fields) => json("POST", "/api/projects", { body: fields }),
  /** @returns {Promise<ProjectOut>} */
  updateProject: (id, fields) => json("PATCH", `/api/projects/${enc(id)}`, { body: fields }),
  /**
   * `conversations`: "move" (to no project) or "delete" (with `confirmCount`).
   * @returns {Promise<ProjectDeleted>}
   */
  deleteProject: (id, conversations = "move", confirmCount = undefined) =>
    json("DELETE", `/api/projects/${enc(id)}`, { query: { conversations, confirmCount } }),
  addProjectFile: (id, file) => json("POST", `/api/projects/${enc(id)}/files`, { body: file }),
  deleteProjectFile: (id, fileId) =>
    json("DELETE", `/api/projects/${enc(id)}/files/${enc(fileId)}`),
  addProjectNote: (id, note) => json("POST", `/api/projects/${enc(id)}/notes`, { body: note }),
  deleteProjectNote: (id, noteId) =>
    json("DELETE", `/api/projects/${enc(id)}/notes/${enc(noteId)}`),
  importProject: (document) => json("POST", "/api/projects/import", { body: document }),
  exportProject: async (id) => {
    const response = await send("GET", `/api/projects/${enc(id)}/export`, { accept: "*/*" });
    const disposition = response.headers.get("Content-Disposition") || "";
    const match = /filename="?([^";]+)"?/i.exec(disposition);
    return { blob: await response.blob(), filename: match ? match[1] : "project.json" };
  },

  /** @returns {Promise<SettingsOut>} */
  getSettings: () => json("GET", "/api/settings"),
  /** @returns {Promise<SettingsOut>} */
  putSettings: (settings) => json("PUT", "/api/settings", { body: settings }),
  /** @returns {Promise<ConnectionTestResult>} */
  testConnection: (body) => json("POST", "/api/settings/test-connection", { body }),
  /** @returns {Promise<LocalServers>} */
  detectLocal: () => json("GET", "/api/settings/detect-local"),

  /** Answer an MCP call waiting for approval: "allow" | "always" | "deny". */
  decideApproval: (id, callId, decision) =>
    json("POST", `/api/conversations/${enc(id)}/tool-calls/${enc(callId)}/approval`, {
      body: { decision },
    }),
  /**
   * The MCP calls waiting for approval in a conversation: `{items: [...]}`.
   * @returns {Promise<PendingApprovals>}
   */
  pendingApprovals: (id) => json("GET", `/api/conversations/${enc(id)}/tool-calls/pending`),
  /** @returns {Promise<McpServerList>} */
  mcpServers: () => json("GET", "/api/mcp/servers"),
  /** `{name, transport: "stdio"|"http", command?, args?, env?, cwd?, url?, headers?,
   * @returns {Promise<McpServerOut>}
   * approval?, timeout?, enabled?}` → the new McpServer (secrets masked). */
  addMcpServer: (server) => json("POST", "/api/mcp/servers", { body: server }),
  restartMcpServer: (name) => json("POST", `/api/mcp/servers/${enc(name)}/restart`, { body: {} }),
  allowMcpServer: (name) => json("POST", `/api/mcp/servers/${enc(name)}/allow`, { body: {} }),
  /** @returns {Promise<McpImportResult>} */
  importMcp: (text) => json("POST", "/api/mcp/import", { body: { text } }),
  /** Open the server's sign-in page in the browser; answers once the sign-in ended. */
  signInMcpServer: (name) => json("POST", `/api/mcp/servers/${enc(name)}/sign-in`, { body: {} }),
  signOutMcpServer: (name) =>
    json("POST", `/api/mcp/servers/${enc(name)}/sign-out`, { body: {} }),
  /** The folders (absolute paths) the server is told about; `[]`: none. */
  setMcpRoots: (name, roots) =>
    json("PUT", `/api/mcp/servers/${enc(name)}/roots`, { body: { roots } }),
  /** Answer a server's question: "accept" (with the form's values) | "decline" | "cancel". */
  answerElicitation: (id, elicitationId, action, content) =>
    json("POST", `/api/conversations/${enc(id)}/elicitations/${enc(elicitationId)}`, {
      body: { action, content },
    }),
  /**
   * The running servers' prompts: `{items: [{server, name, title, description, arguments}]}`.
   * @returns {Promise<PromptList>}
   */
  mcpPrompts: () => json("GET", "/api/mcp/prompts"),
  /**
   * A prompt filled in: `{text}`.
   * @returns {Promise<PromptText>}
   */
  getMcpPrompt: (server, name, args) =>
    json("POST", "/api/mcp/prompts/get", { body: { server, name, arguments: args } }),
  /** @returns {Promise<ResourceList>} */
  mcpResources: (name) => json("GET", `/api/mcp/servers/${enc(name)}/resources`),
  /**
   * `{uri, name, mediaType, text?, dataBase64?}`
   * @returns {Promise<ResourceContentOut>}
   */
  readMcpResource: (name, uri) =>
    json("POST", `/api/mcp/servers/${enc(name)}/resources/read`, { body: { uri } }),
  /**
   * The servers' questions waiting in a conversation: `{items: [...]}`.
   * @returns {Promise<PendingElicitations>}
   */
  pendingElicitations: (id) => json("GET", `/api/conversations/${enc(id)}/elicitations`),
  /**
   * `{approval?, timeout?, enabled?, tools?: {TOOL: {approval?, enabled?}}}`
   * @returns {Promise<McpServerOut>}
   */
  updateMcpServer: (name, change) =>
    json("PATCH", `/api/mcp/servers/${enc(name)}`, { body: change }),
  deleteMcpServer: (name) => json("DELETE", `/api/mcp/servers/${enc(name)}`),
  /**
   * Every configured provider's models (discovered, else the catalog) and its status.
   * @returns {Promise<ModelsOut>}
   */
  listModels: () => json("GET", "/api/models"),
  /** @returns {Promise<ModelsOut>} */
  refreshModels: (provider) =>
    json("POST", "/api/models/refresh", { body: provider ? { provider } : {} }),
};
