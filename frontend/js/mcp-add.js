// "Add server" in Settings → Tools (MCP): a form for one `[mcp_servers.NAME]` table.
//
// The server checks what is sent (POST /api/mcp/servers) and says what is wrong; the form
// keeps every value until the server has taken it, so a mistake costs one correction,
// not a retyped form. Environment values and header values are typed into password
// fields and never come back: the list shows their masks.

import { api } from "./api.js";
import { h, icon } from "./dom.js";
import { problemBox } from "./mcp-edit.js";
import { field } from "./settings-fields.js";

/** Rows of name and secret value (environment variables or headers), with an add button. */
function pairsEditor(kind, namePlaceholder, valuePlaceholder) {
  const rows = h("div", { class: "mcp-pairs", dataset: { pairs: kind } });
  const addRow = () => {
    const name = h("input", {
      class: "input",
      placeholder: namePlaceholder,
      "aria-label": `${kind} name`,
      dataset: { pairName: kind },
    });
    const row = h(
      "div",
      { class: "mcp-pair" },
      name,
      h("input", {
        class: "input",
        type: "password",
        autocomplete: "off",
        placeholder: valuePlaceholder,
        "aria-label": `${kind} value`,
        dataset: { pairValue: kind },
      }),
      h(
        "button",
        {
          type: "button",
          class: "icon-button",
          title: "Remove",
          "aria-label": `Remove this ${kind}`,
          on: { click: () => row.remove() },
        },
        icon("trash-2", "small"),
      ),
    );
    rows.append(row);
    name.focus();
  };
  const add = h(
    "button",
    { type: "button", class: "button small", dataset: { addPair: kind }, on: { click: addRow } },
    icon("plus", "small"),
    `Add ${kind}`,
  );
  const values = () => {
    const out = {};
    for (const row of rows.children) {
      const [name, value] = row.querySelectorAll("input");
      // A value without a name is sent too, so the server can say it needs one.
      if (name.value.trim() || value.value) {
        out[name.value.trim()] = value.value;
      }
    }
    return out;
  };
  return { element: h("div", {}, rows, add), values, clear: () => rows.replaceChildren() };
}

/** The "Add server" card; `onAdded(name)` runs once the server has written it. */
export function addServerForm(onAdded) {
  const input = (id, props = {}) => h("input", { class: "input", id, ...props });
  const name = input("mcp-add-name", { placeholder: "files", autocomplete: "off" });
  const transport = h(
    "select",
    { class: "select", id: "mcp-add-transport" },
    h("option", { value: "stdio", text: "stdio: a command Foldline starts" }),
    h("option", { value: "http", text: "HTTP: a server at a URL" }),
  );
  const command = input("mcp-add-command", { placeholder: "npx" });
  const args = h("textarea", {
    class: "input",
    id: "mcp-add-args",
    rows: 3,
    spellcheck: "false",
    placeholder: "-y\n@modelcontextprotocol/server-filesystem\n/home/me/projects",
  });
  const cwd = input("mcp-add-cwd", { placeholder: "optional" });
  const env = pairsEditor("variable", "API_TOKEN", "value");
  const url = input("mcp-add-url", { placeholder: "http://127.0.0.1:9000/mcp" });
  const headers = pairsEditor("header", "Authorization", "Bearer …");
  const approval = h(
    "select",
    { class: "select", id: "mcp-add-approval" },
    h("option", { value: "ask", text: "ask before every call" }),
    h("option", { value: "always", text: "always allow" }),
    h("option", { value: "never", text: "never allow" }),
  );
  // Attributes, not properties: `form.reset()` brings back these defaults.
  const timeout = input("mcp-add-timeout", { inputmode: "numeric", value: "60" });
  const enabled = h("input", { type: "checkbox", id: "mcp-add-enabled", checked: true });

  const stdioFields = h(
    "div",
    { class: "mcp-add-stdio" },
    h("div", { class: "field-row" }, field("Command", command), field("Working directory", cwd)),
    field("Arguments", args, "One per line, passed as they are (no shell quoting)."),
    field("Environment", env.element, "Added to the process's environment; values stay hidden."),
  );
  const httpFields = h(
    "div",
    { class: "mcp-add-http", ".hidden": true },
    field("URL", url, "Streamable HTTP, e.g. http://127.0.0.1:9000/mcp."),
    field("Headers", headers.element, "Sent with every request; values stay hidden."),
  );

  const problem = problemBox("mcp-add-error");
  transport.addEventListener("change", () => {
    stdioFields.hidden = transport.value !== "stdio";
    httpFields.hidden = transport.value !== "http";
    problem.hide(); // it spoke of the other transport's fields
  });
  const submit = h(
    "button",
    { type: "submit", class: "button primary", id: "mcp-add-submit" },
    icon("plus", "small"),
    "Add server",
  );
  const body = () => {
    const stdio = transport.value === "stdio";
    const out = {
      name: name.value.trim(),
      transport: transport.value,
      approval: approval.value,
      enabled: enabled.checked,
    };
    // An unreadable timeout is sent as it is: the server says what is wrong with it.
    const seconds = timeout.value.trim();
    if (seconds) {
      out.timeout = Number.isFinite(Number(seconds)) ? Number(seconds) : seconds;
    }
    if (stdio) {
      out.command = command.value.trim();
      out.args = args.value.split("\n").filter((line) => line.trim() !== "");
      out.env = env.values();
      if (cwd.value.trim()) {
        out.cwd = cwd.value.trim();
      }
    } else {
      out.url = url.value.trim();
      out.headers = headers.values();
    }
    return out;
  };
  const card = h(
    "details",
    { class: "card mcp-add", id: "mcp-add" },
    h("summary", { class: "card-title" }, icon("plus", "small"), " Add server"),
  );
  const form = h(
    "form",
    { id: "mcp-add-form", novalidate: true },
    h(
      "div",
      { class: "field-row" },
      field("Name", name, "Its tools are offered as NAME__TOOL."),
      field("Transport", transport),
    ),
    stdioFields,
    httpFields,
    h(
      "div",
      { class: "field-row" },
      field("Approval", approval),
      field("Timeout per call (s)", timeout),
    ),
    h(
      "label",
      { class: "check" },
      enabled,
      h("span", { text: "Enabled (starts with the next message that needs it)" }),
    ),
    problem.element,
    h("div", { class: "card-actions" }, submit),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    submit.disabled = true;
    try {
      const added = await api.addMcpServer(body());
      problem.hide();
      form.reset();
      env.clear();
      headers.clear();
      transport.dispatchEvent(new Event("change"));
      card.open = false;
      await onAdded(added.name);
    } catch (error) {
      // Everything typed stays; the reason is shown next to the button (a notice would
      // outlive the mistake it speaks of).
      problem.show(error.message);
    } finally {
      submit.disabled = false;
    }
  });
  card.append(form);
  return card;
}
