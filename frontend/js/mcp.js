// MCP tools in the UI: the approval card of a call that waits for the person, and the
// Settings tab that shows each server's state (running, failed and why, its tools) with
// Restart, and imports Claude Desktop's `mcpServers`.
//
// The card sits above the composer while its call waits; it goes away when the person
// decides, when the server says the call was resolved, or when the turn ends (Stop
// abandons the call). Environment values and headers arrive masked; nothing here can
// reveal them.

import { api } from "./api.js";
import { byId, h, icon } from "./dom.js";
import { notifyError } from "./notices.js";
import { on } from "./state.js";

// ---- approval ---------------------------------------------------------------------------

function cardFor(callId) {
  return byId("composer-status").querySelector(
    `.approval-card[data-call-id="${CSS.escape(callId)}"]`,
  );
}

/**
 * Show the card of a `tool.approval_required` event.
 * @param {ApprovalRequired} data
 */
export function showApproval(conversationId, data) {
  if (cardFor(data.callId)) {
    return;
  }
  const buttons = h("div", { class: "approval-actions" });
  const card = h(
    "div",
    {
      class: "approval-card",
      role: "alertdialog",
      "aria-label": `Approve ${data.tool} of ${data.server}`,
      dataset: { callId: data.callId, conversationId },
    },
    h(
      "div",
      { class: "approval-title" },
      icon("wrench", "small"),
      h("span", { text: "The model wants to run " }),
      h("code", { text: data.tool }),
      h("span", { text: " of the MCP server " }),
      h("strong", { text: data.server }),
    ),
    h("pre", { class: "approval-arguments", text: JSON.stringify(data.arguments, null, 2) }),
    buttons,
  );
  const decide = async (decision) => {
    for (const button of buttons.children) {
      button.disabled = true;
    }
    try {
      await api.decideApproval(conversationId, data.callId, decision);
      card.remove();
    } catch (error) {
      for (const button of buttons.children) {
        button.disabled = false;
      }
      notifyError("The decision was not taken", error);
    }
  };
  for (const [decision, label, style] of [
    ["allow", "Allow once", "primary"],
    ["always", "Always allow this tool", ""],
    ["deny", "Deny", "danger"],
  ]) {
    buttons.append(
      h("button", {
        type: "button",
        class: ["button", style],
        dataset: { decision },
        text: label,
        on: { click: () => decide(decision) },
      }),
    );
  }
  byId("composer-status").append(card);
  buttons.firstElementChild.focus();
}

/** A `tool.approval_resolved` event: the call went on (or was denied) elsewhere. */
export function hideApproval(callId) {
  cardFor(callId)?.remove();
}

/** The turn ended: no call waits any more. */
export function clearApprovals() {
  for (const card of byId("composer-status").querySelectorAll(".approval-card")) {
    card.remove();
  }
}

// A page opened (or reloaded) while a call waits shows its card too: the event that
// announced it went to the stream the old page was reading.
on("conversation", async (conversation) => {
  for (const card of byId("composer-status").querySelectorAll(".approval-card")) {
    if (card.dataset.conversationId !== conversation?.id) {
      card.remove();
    }
  }
  if (!conversation?.id) {
    return;
  }
  try {
    const { items } = await api.pendingApprovals(conversation.id);
    for (const pending of items) {
      showApproval(conversation.id, pending);
    }
  } catch {
    // The chat works without the cards; the next open tries again.
  }
});

// ---- settings ---------------------------------------------------------------------------

const STATE_TEXT = {
  stopped: "not started yet (starts with the next message)",
  starting: "starting…",
  running: "running",
  failed: "failed",
  disabled: "disabled",
};

/** @param {McpServerOut} server */
function serverRow(server, refresh) {
  const where =
    server.transport === "stdio"
      ? [server.command, ...server.args].join(" ")
      : server.url;
  const restart = h("button", {
    type: "button",
    class: "button small",
    dataset: { restart: server.name },
    text: "Restart",
  });
  restart.addEventListener("click", async () => {
    restart.disabled = true;
    restart.textContent = "Restarting…";
    try {
      await api.restartMcpServer(server.name);
    } catch (error) {
      notifyError(`${server.name} could not be restarted`, error);
    }
    await refresh();
  });
  const secrets = [
    ...Object.entries(server.env).map(([k, v]) => `${k}=${v}`),
    ...Object.entries(server.headers).map(([k, v]) => `${k}: ${v}`),
  ];
  return h(
    "div",
    { class: "mcp-server", dataset: { server: server.name, state: server.state } },
    h(
      "div",
      { class: "mcp-server-head" },
      h("strong", { text: server.name }),
      h("span", { class: ["mcp-state", server.state], text: STATE_TEXT[server.state] ?? server.state }),
      h("span", { class: "spacer" }),
      server.enabled ? restart : null,
    ),
    h("div", { class: "mcp-where" }, h("code", { text: where ?? "" })),
    secrets.length ? h("div", { class: "mcp-secrets", text: secrets.join("  ") }) : null,
    server.error ? h("div", { class: "mcp-error", role: "alert", text: server.error }) : null,
    toolTable(server, refresh),
    h("div", {
      class: "mcp-approval",
      text: `Approval: ${server.approval}; timeout ${server.timeout} s${
        server.disabledTools.length ? `; disabled: ${server.disabledTools.join(", ")}` : ""
      }`,
    }),
  );
}

/**
 * Each tool the server lists: offered as, switched on or off, and its own approval.
 * @param {McpServerOut} server
 */
function toolTable(server, refresh) {
  const offered = new Map(server.tools.map((tool) => [tool.name, tool]));
  const names = [...offered.keys(), ...server.disabledTools];
  if (!names.length) {
    return h("div", {
      class: "mcp-tools",
      text: server.state === "running" ? "No tools offered." : "",
    });
  }
  const change = async (tool, override) => {
    try {
      await api.updateMcpServer(server.name, { tools: { [tool]: override } });
    } catch (error) {
      notifyError(`${tool} was not changed`, error);
    }
    await refresh();
  };
  const rows = names.map((name) => {
    const tool = offered.get(name);
    const approval = server.toolOverrides[name]?.approval ?? "";
    const enabled = h("input", {
      type: "checkbox",
      "aria-label": `Offer ${name}`,
      dataset: { toolEnabled: name },
      ".checked": Boolean(tool),
      on: { change: (event) => change(name, { enabled: event.target.checked }) },
    });
    const select = h(
      "select",
      {
        "aria-label": `Approval of ${name}`,
        dataset: { toolApproval: name },
        on: { change: (event) => change(name, { approval: event.target.value || null }) },
      },
      ...[
        ["", `as the server (${server.approval})`],
        ["ask", "ask"],
        ["always", "always"],
        ["never", "never"],
      ].map(([value, label]) =>
        h("option", { value, text: label, ".selected": value === approval }),
      ),
    );
    return h(
      "tr",
      { dataset: { tool: name } },
      h("td", {}, enabled),
      h(
        "td",
        {},
        h("code", { text: tool ? tool.offeredAs : name }),
        tool?.note ? h("div", { class: "mcp-note", text: tool.note }) : null,
      ),
      h("td", {}, select),
    );
  });
  return h(
    "table",
    { class: "mcp-tools" },
    h(
      "thead",
      {},
      h("tr", {}, h("th", { text: "On" }), h("th", { text: "Tool" }), h("th", { text: "Approval" })),
    ),
    h("tbody", {}, rows),
  );
}

/** The "Tools (MCP)" tab of Settings. */
export function mcpPanel() {
  const list = h("div", { class: "mcp-servers", id: "mcp-servers" }, h("p", { text: "Loading…" }));
  const refresh = async () => {
    try {
      const { servers } = await api.mcpServers();
      list.replaceChildren(
        ...(servers.length
          ? servers.map((server) => serverRow(server, refresh))
          : [h("p", { class: "muted", text: "No MCP servers are configured." })]),
      );
    } catch (error) {
      list.replaceChildren(h("p", { class: "mcp-error", text: error.message }));
    }
  };
  const text = h("textarea", {
    id: "mcp-import-text",
    rows: 6,
    spellcheck: "false",
    placeholder: '{"mcpServers": {"files": {"command": "npx", "args": ["…"]}}}',
  });
  const result = h("div", { class: "settings-foot-note", "aria-live": "polite" });
  const importButton = h("button", {
    type: "button",
    class: "button",
    id: "mcp-import",
    text: "Import",
  });
  importButton.addEventListener("click", async () => {
    try {
      const done = await api.importMcp(text.value);
      result.textContent =
        `Imported: ${done.imported.join(", ") || "none"}` +
        (done.skipped.length ? `; already configured (kept): ${done.skipped.join(", ")}` : "");
      text.value = "";
      await refresh();
    } catch (error) {
      result.textContent = "";
      notifyError("The import failed", error);
    }
  });
  refresh();
  return h(
    "div",
    { class: "settings-section" },
    h("h3", { text: "MCP servers" }),
    h("p", {
      class: "muted",
      text: "Servers are configured in config.toml under [mcp_servers.NAME]. They start when a message first needs them and stop with the app. Each call asks for your approval unless the server or tool says otherwise.",
    }),
    list,
    h("h3", { text: "Import from Claude Desktop" }),
    h("p", {
      class: "muted",
      text: "Paste claude_desktop_config.json (or its mcpServers object). Nothing is started by the import.",
    }),
    text,
    h("div", { class: "mcp-import-row" }, importButton, result),
  );
}
