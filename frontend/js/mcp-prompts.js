// The MCP servers' prompts and resources, offered in the message box after "/".
//
// Typing "/" at the start of an empty message lists the running servers' prompts (and,
// last, each server's resources), filtered by what follows the slash. Up/Down move,
// Enter or a click chooses, Escape closes. A prompt with arguments asks for them first;
// its text then replaces the message, to be read and sent like any other. A text
// resource is put into the message as a quoted block under its URI; a binary one (an
// image, a PDF) joins the files waiting to be sent, as a chip exactly like an attached
// file: the same checks, and the same notice when its type cannot be sent.

import { api } from "./api.js";
import { byId, h } from "./dom.js";
import { notify, notifyError } from "./notices.js";

/** The composer's file tray (`fileTray`), where a binary resource goes. */
let files = null;
let menu = null;
let entries = [];
let shown = [];
let active = 0;

function input() {
  return byId("composer-input", HTMLTextAreaElement);
}

function setText(text) {
  const box = input();
  box.value = text;
  box.dispatchEvent(new Event("input"));
  box.focus();
}

function close() {
  menu?.remove();
  menu = null;
  entries = [];
  shown = [];
}

/** Every prompt and resource of the running servers, as menu entries. */
async function load() {
  const found = [];
  try {
    const { items } = await api.mcpPrompts();
    for (const prompt of items) {
      found.push({ kind: "prompt", label: `${prompt.server}/${prompt.name}`, prompt });
    }
    const { servers } = await api.mcpServers();
    for (const server of servers) {
      if (server.state !== "running") {
        continue;
      }
      try {
        const listed = await api.mcpResources(server.name);
        for (const resource of listed.items) {
          found.push({
            kind: "resource",
            label: `${server.name}: ${resource.title || resource.name}`,
            server: server.name,
            resource,
          });
        }
      } catch {
        // A server without resources is simply not listed.
      }
    }
  } catch (error) {
    notifyError("The MCP prompts could not be listed", error);
  }
  return found;
}

function render(filter) {
  const wanted = filter.toLowerCase();
  shown = entries.filter((e) => e.label.toLowerCase().includes(wanted));
  active = Math.min(active, Math.max(0, shown.length - 1));
  menu.replaceChildren(
    ...(shown.length
      ? shown.map((entry, i) =>
          h(
            "div",
            {
              class: ["prompt-entry", i === active && "active", entry.kind],
              role: "option",
              "aria-selected": i === active ? "true" : "false",
              dataset: { label: entry.label },
              on: { mousedown: (event) => (event.preventDefault(), choose(entry)) },
            },
            h("span", { class: "prompt-kind", text: entry.kind === "prompt" ? "prompt" : "resource" }),
            h("strong", { text: entry.label }),
            h("span", {
              class: "prompt-description",
              text: (entry.prompt?.description ?? entry.resource?.description) || "",
            }),
          ),
        )
      : [
          h("div", {
            class: "prompt-empty",
            text: "No MCP prompts or resources (servers start with the first message).",
          }),
        ]),
  );
}

async function open() {
  menu = h("div", {
    class: "prompt-menu",
    role: "listbox",
    "aria-label": "MCP prompts and resources",
  });
  menu.append(h("div", { class: "prompt-empty", text: "Loading…" }));
  byId("composer-status").append(menu);
  entries = await load();
  if (menu) {
    render(input().value.slice(1));
  }
}

async function choose(entry) {
  close();
  if (entry.kind === "resource") {
    await useResource(entry);
  } else if (entry.prompt.arguments.length) {
    askArguments(entry.prompt);
  } else {
    await usePrompt(entry.prompt, {});
  }
}

async function usePrompt(prompt, args) {
  try {
    const { text } = await api.getMcpPrompt(prompt.server, prompt.name, args);
    setText(text);
  } catch (error) {
    notifyError(`The prompt ${prompt.name} could not be used`, error);
  }
}

async function useResource(entry) {
  try {
    const content = await api.readMcpResource(entry.server, entry.resource.uri);
    const current = input().value.replace(/^\/\S*$/, "");
    if (content.text == null) {
      setText(current);
      await attachResource(content);
      return;
    }
    setText(`${current}${current ? "\n\n" : ""}[resource ${content.uri}]\n\`\`\`\n${content.text}\n\`\`\`\n`);
  } catch (error) {
    notifyError("The resource could not be read", error);
  }
}

/** A binary resource as a file in the composer's tray, as if the person attached it. */
async function attachResource(content) {
  if (!content.dataBase64 || !files) {
    notify({
      kind: "warn",
      title: "This resource is empty",
      text: `${content.name} (${content.mediaType}) has no data to attach.`,
    });
    return;
  }
  const bytes = Uint8Array.from(atob(content.dataBase64), (c) => c.charCodeAt(0));
  await files.add([new File([bytes], content.name, { type: content.mediaType })]);
}

/** A prompt's arguments as a small form above the message box. */
function askArguments(prompt) {
  const fields = prompt.arguments.map((argument) => {
    const box = h("input", { type: "text", "aria-label": argument.name });
    return [
      argument,
      box,
      h(
        "label",
        { class: "elicitation-field" },
        h("span", { text: argument.required ? `${argument.name} *` : argument.name }),
        box,
        argument.description
          ? h("span", { class: "elicitation-help", text: argument.description })
          : null,
      ),
    ];
  });
  const problem = h("div", { class: "elicitation-problem", role: "alert", hidden: true });
  const card = h(
    "form",
    { class: ["approval-card", "prompt-card"], "aria-label": `Arguments of ${prompt.name}` },
    h("div", { class: "approval-title", text: `The prompt ${prompt.name} of ${prompt.server}` }),
    ...fields.map((f) => f[2]),
    problem,
    h(
      "div",
      { class: "approval-actions" },
      h("button", { type: "submit", class: "button primary", text: "Use prompt" }),
      h("button", {
        type: "button",
        class: "button",
        text: "Cancel",
        on: { click: () => card.remove() },
      }),
    ),
  );
  card.addEventListener("submit", async (event) => {
    event.preventDefault();
    const missing = fields.find(([argument, box]) => argument.required && !box.value.trim());
    if (missing) {
      problem.hidden = false;
      problem.textContent = `${missing[0].name}: required`;
      return;
    }
    const args = Object.fromEntries(
      fields.filter(([, box]) => box.value.trim()).map(([a, box]) => [a.name, box.value]),
    );
    card.remove();
    await usePrompt(prompt, args);
  });
  byId("composer-status").append(card);
  fields[0]?.[1].focus();
}

/** @param {{add: (files: File[]) => Promise<void>}} tray the composer's files */
export function initPromptMenu(tray) {
  files = tray;
  const box = input();
  box.addEventListener("input", () => {
    const typed = box.value;
    if (/^\/\S*$/.test(typed)) {
      if (!menu) {
        active = 0;
        open();
      } else if (entries.length) {
        render(typed.slice(1));
      }
    } else if (menu) {
      close();
    }
  });
  // Capture: while the menu is open, Enter chooses instead of sending.
  box.addEventListener(
    "keydown",
    (event) => {
      if (!menu) {
        return;
      }
      if (event.key === "Escape") {
        close();
      } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        active = (active + (event.key === "ArrowDown" ? 1 : -1) + shown.length) % Math.max(1, shown.length);
        render(box.value.slice(1));
      } else if (event.key === "Enter" && shown.length) {
        choose(shown[active]);
      } else {
        return;
      }
      event.preventDefault();
      event.stopImmediatePropagation();
    },
    { capture: true },
  );
  // Closed when the box loses focus for good: focus back within the delay (a click
  // elsewhere and straight back, then "/") keeps the menu just opened.
  box.addEventListener("blur", () =>
    setTimeout(() => {
      if (document.activeElement !== box) {
        close();
      }
    }, 150),
  );
}
