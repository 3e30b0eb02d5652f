// The "Tools (MCP)" tab of Settings: each server's state (running, failed and why, its
// tools) with Restart, Edit and Remove, per-tool switches and approval, a form that adds
// a server, and the import of Claude Desktop's `mcpServers`. Environment values and
// headers arrive masked; nothing here can reveal them.

import { api } from "./api.js";
import { h } from "./dom.js";
import { addServerForm } from "./mcp-add.js";
import { rootsEditor, signInLine } from "./mcp-signin.js";
import { editServerForm, problemBox, removeServer, withCode } from "./mcp-edit.js";
import { notifyError } from "./notices.js";

const STATE_TEXT = {
  stopped: "not started yet (starts with the next message)",
  starting: "starting…",
  running: "running",
  failed: "failed",
  disabled: "disabled",
  awaiting_approval: "waits for your yes: it runs the command below on this computer",
  signin_required: "Sign in required",
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
  // A problem with this server is said in its card, next to the button that caused it.
  const problem = problemBox(`mcp-problem-${server.name}`, "mcp-problem");
  restart.addEventListener("click", async () => {
    restart.disabled = true;
    restart.textContent = "Restarting…";
    try {
      await api.restartMcpServer(server.name);
    } catch (error) {
      restart.disabled = false;
      restart.textContent = "Restart";
      problem.show(error.message);
      return;
    }
    await refresh();
  });
  // A command server added here or by an import starts only once the person, shown its
  // command, allows it.
  const allow = h("button", {
    type: "button",
    class: "button small primary",
    dataset: { allow: server.name },
    text: "Allow and start",
  });
  allow.addEventListener("click", async () => {
    allow.disabled = true;
    allow.textContent = "Starting…";
    try {
      await api.allowMcpServer(server.name);
    } catch (error) {
      allow.disabled = false;
      allow.textContent = "Allow and start";
      problem.show(error.message);
      return;
    }
    await refresh();
  });
  const edit = h("button", {
    type: "button",
    class: "button small",
    dataset: { edit: server.name },
    text: "Edit",
  });
  const remove = h("button", {
    type: "button",
    class: "button small",
    dataset: { remove: server.name },
    text: "Remove",
  });
  remove.addEventListener("click", async () => {
    if (await removeServer(server.name, problem)) {
      await refresh();
    }
  });
  const secrets = [
    ...Object.entries(server.env).map(([k, v]) => `${k}=${v}`),
    ...Object.entries(server.headers).map(([k, v]) => `${k}: ${v}`),
  ];
  const details = h(
    "div",
    { class: "mcp-details" },
    h("div", { class: "mcp-where" }, h("code", { text: where ?? "" })),
    secrets.length ? h("div", { class: "mcp-secrets", text: secrets.join("  ") }) : null,
    server.error && server.state !== "signin_required"
      ? h("div", { class: "mcp-error", role: "alert" }, withCode(server.error))
      : null,
    server.limits ? h("div", { class: "mcp-error", role: "status", text: server.limits }) : null,
  );
  const start = server.state === "awaiting_approval" ? allow : server.enabled ? restart : null;
  const row = h(
    "div",
    { class: "mcp-server", dataset: { server: server.name, state: server.state } },
    h(
      "div",
      { class: "mcp-server-head" },
      h("strong", { text: server.name }),
      h("span", { class: ["mcp-state", server.state], text: STATE_TEXT[server.state] ?? server.state }),
      h("span", { class: "spacer" }),
      h("span", { class: "mcp-server-actions" }, start, edit, remove),
    ),
    details,
    problem.element,
    signInLine(server, refresh),
    toolTable(server, refresh),
    h("div", {
      class: "mcp-approval",
      text: `Approval: ${server.approval}; timeout ${server.timeout} s${
        server.disabledTools.length ? `; disabled: ${server.disabledTools.join(", ")}` : ""
      }${
        server.hiddenTools.length
          ? `; not offered (they run only as tasks, which Foldline does not run): ${server.hiddenTools.join(", ")}`
          : ""
      }`,
    }),
    rootsEditor(server, refresh),
  );
  edit.addEventListener("click", () => {
    const form = editServerForm(server, async (changed) => {
      if (changed) {
        await refresh();
      } else {
        form.replaceWith(details);
        edit.disabled = false;
        edit.focus();
      }
    });
    details.replaceWith(form);
    edit.disabled = true;
    form.querySelector("input, textarea")?.focus();
  });
  return row;
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
      text: "Add a server here, import Claude Desktop's, or write it in config.toml under [mcp_servers.NAME]. Servers start when a message first needs them and stop with the app. Each call asks for your approval unless the server or tool says otherwise.",
    }),
    list,
    addServerForm(refresh),
    h("h3", { text: "Import from Claude Desktop" }),
    h("p", {
      class: "muted",
      text: "Paste claude_desktop_config.json (or its mcpServers object). Nothing is started by the import.",
    }),
    text,
    h("div", { class: "mcp-import-row" }, importButton, result),
  );
}
