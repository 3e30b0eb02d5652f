// Edit and Remove for one server in Settings → Tools (MCP).
//
// Edit changes how the server is reached (command, arguments, working directory or URL),
// its secrets, approval and timeout through PATCH /api/mcp/servers/NAME, which merges
// secrets: a stored value is never shown, so an empty field keeps it, a typed one
// replaces it, and removing a row deletes that name. Problems are shown in the card that
// caused them (not as notices that outlive it), with `names` drawn as code.

import { api } from "./api.js";
import { confirmDialog } from "./dialog.js";
import { h, icon } from "./dom.js";
import { field } from "./settings-fields.js";

/** Text with `backticked` names drawn as code (server messages quote names that way). */
export function withCode(text) {
  return String(text)
    .split(/`([^`]*)`/)
    .map((part, index) => (index % 2 ? h("code", { text: part }) : part));
}

/** An inline problem box that can be filled and emptied. */
export function problemBox(id, className = "mcp-error") {
  const box = h("div", { class: className, role: "alert", id, ".hidden": true });
  return {
    element: box,
    show(message) {
      box.replaceChildren(...withCode(message));
      box.hidden = false;
    },
    hide() {
      box.hidden = true;
    },
  };
}

/** Stored names with hidden values, and new rows: `changes()` is the PATCH's merge. */
function secretsEditor(kind, stored) {
  const rows = h("div", { class: "mcp-pairs", dataset: { editPairs: kind } });
  const removed = new Set();
  const row = (name, isStored) => {
    const nameInput = h("input", {
      class: "input",
      "aria-label": `${kind} name`,
      ".value": name,
      ".readOnly": isStored,
      dataset: { pairName: kind },
    });
    const valueInput = h("input", {
      class: "input",
      type: "password",
      autocomplete: "off",
      placeholder: isStored ? "unchanged" : "value",
      "aria-label": `${kind} value`,
      dataset: { pairValue: kind },
    });
    const element = h(
      "div",
      { class: "mcp-pair" },
      nameInput,
      valueInput,
      h(
        "button",
        {
          type: "button",
          class: "icon-button",
          "aria-label": `Remove ${name || `this ${kind}`}`,
          on: {
            click: () => {
              if (isStored) {
                removed.add(name);
              }
              element.remove();
            },
          },
        },
        icon("trash-2", "small"),
      ),
    );
    return element;
  };
  for (const name of Object.keys(stored)) {
    rows.append(row(name, true));
  }
  const add = h(
    "button",
    {
      type: "button",
      class: "button small",
      on: { click: () => rows.append(row("", false)) },
    },
    icon("plus", "small"),
    `Add ${kind}`,
  );
  const changes = () => {
    const out = Object.fromEntries([...removed].map((name) => [name, null]));
    for (const element of rows.children) {
      const [name, value] = element.querySelectorAll("input");
      if (value.value) {
        out[name.value.trim()] = value.value;
      }
    }
    return Object.keys(out).length ? out : null;
  };
  return { element: h("div", {}, rows, add), changes };
}

/**
 * The Edit card of one server; `done(changed)` runs when it is saved or cancelled.
 * @param {McpServerOut} server
 */
export function editServerForm(server, done) {
  const stdio = server.transport === "stdio";
  const input = (name, value) =>
    h("input", { class: "input", dataset: { edit: name }, ".value": value ?? "" });
  const command = input("command", server.command);
  const args = h("textarea", {
    class: "input mcp-args",
    rows: 3,
    spellcheck: "false",
    dataset: { edit: "args" },
    ".value": server.args.join("\n"),
  });
  const cwd = input("cwd", server.cwd);
  const url = input("url", server.url);
  const secrets = stdio
    ? secretsEditor("variable", server.env)
    : secretsEditor("header", server.headers);
  const approval = h(
    "select",
    { class: "select", dataset: { edit: "approval" } },
    ...[
      ["ask", "ask before every call"],
      ["always", "always allow"],
      ["never", "never allow"],
    ].map(([value, label]) =>
      h("option", { value, text: label, ".selected": value === server.approval }),
    ),
  );
  const timeout = input("timeout", String(server.timeout));
  const problem = problemBox(`mcp-edit-error-${server.name}`, "mcp-problem");
  const save = h("button", { type: "submit", class: "button primary", text: "Save changes" });
  const cancel = h("button", {
    type: "button",
    class: "button",
    text: "Cancel",
    on: { click: () => done(false) },
  });
  const change = () => {
    const out = { approval: approval.value };
    const seconds = timeout.value.trim();
    out.timeout = Number.isFinite(Number(seconds)) && seconds ? Number(seconds) : seconds;
    if (stdio) {
      out.command = command.value.trim();
      out.args = args.value.split("\n").filter((line) => line.trim() !== "");
      out.cwd = cwd.value.trim() || null;
      const env = secrets.changes();
      if (env) {
        out.env = env;
      }
    } else {
      out.url = url.value.trim();
      const headers = secrets.changes();
      if (headers) {
        out.headers = headers;
      }
    }
    return out;
  };
  const form = h(
    "form",
    { class: "mcp-edit", dataset: { editServer: server.name }, novalidate: true },
    stdio
      ? [
          h(
            "div",
            { class: "field-row" },
            field("Command", command),
            field("Working directory", cwd),
          ),
          field("Arguments", args, "One per line."),
          field("Environment", secrets.element, "Leave a value empty to keep it."),
        ]
      : [
          field("URL", url),
          field("Headers", secrets.element, "Leave a value empty to keep it."),
        ],
    h(
      "div",
      { class: "field-row" },
      field("Approval", approval),
      field("Timeout per call (s)", timeout),
    ),
    problem.element,
    h("div", { class: "card-actions" }, save, cancel),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    save.disabled = true;
    try {
      await api.updateMcpServer(server.name, change());
      done(true);
    } catch (error) {
      problem.show(error.message);
    } finally {
      save.disabled = false;
    }
  });
  form.addEventListener("keydown", (event) => {
    // Esc cancels the edit, not the whole Settings dialog with it.
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      done(false);
    }
  });
  return form;
}

/** Ask, then remove the server from config.toml (stopping it). */
export async function removeServer(name, problem) {
  const sure = await confirmDialog({
    title: `Remove ${name}?`,
    text: "Its settings are deleted from config.toml and it stops. Conversations keep the tool calls it made.",
    confirmLabel: "Remove",
    danger: true,
  });
  if (!sure) {
    return false;
  }
  try {
    await api.deleteMcpServer(name);
    return true;
  } catch (error) {
    problem.show(error.message);
    return false;
  }
}
