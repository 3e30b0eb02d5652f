// A project's dialog: its name, instructions and default model, its files and pinned
// notes (added and removed at once), and its export. What it holds is sent with every
// call of every conversation in the project, so the dialog says so and shows the sizes.

import { api } from "./api.js";
import { formatSize, mediaTypeOf, precheck } from "./attachments.js";
import { openModal } from "./dialog.js";
import { h, icon } from "./dom.js";
import { notify, notifyError } from "./notices.js";
import { state } from "./state.js";

/** Read a File as base64 (the API's `data`). */
function base64Of(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).split(",", 2)[1] ?? "");
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

/** "12 KB · 3 pages" */
function fileDetails(file) {
  const pages = file.pages ? ` · ${file.pages} page${file.pages === 1 ? "" : "s"}` : "";
  return formatSize(file.size) + pages;
}

/**
 * Open the dialog of project `id`; `changed` runs after anything was saved.
 * @param {string} id
 */
export async function openProjectDialog(id, { changed = async () => {} } = {}) {
  /** @type {ProjectOut} */
  let project;
  try {
    project = await api.getProject(id);
  } catch (error) {
    notifyError("Could not open the project", error);
    return;
  }
  const name = h("input", {
    class: "input",
    type: "text",
    id: "project-name",
    ".value": project.name,
  });
  const instructions = h("textarea", {
    class: "input",
    id: "project-instructions",
    rows: "6",
    placeholder: "Sent before the system prompt of each conversation in this project.",
    ".value": project.instructions,
  });
  // Whether the model in one of the project's conversations may search and read the
  // others ([compaction] recall_conversations in the project's settings; "off" stops it).
  const sharedCompaction = project.settings?.compaction ?? {};
  const recallAcross = h("input", {
    type: "checkbox",
    id: "project-recall",
    ".checked": sharedCompaction.recall_conversations !== "off",
  });
  const choices = h("datalist", { id: "project-models" });
  const model = h("input", {
    class: "input",
    type: "text",
    id: "project-model",
    list: "project-models",
    placeholder: "The app's default model",
    ".value": project.model ?? "",
  });
  const files = h("ul", { class: "project-files", "aria-label": "Files" });
  const notes = h("ul", { class: "project-notes", "aria-label": "Pinned notes" });
  // Like the composer's attach button: any file can be picked; the same checks as a
  // message's files refuse what cannot be sent, with a notice naming the rule.
  const picker = h("input", { type: "file", multiple: true, hidden: true });
  const noteTitle = h("input", { class: "input", type: "text", placeholder: "Note title" });
  const noteText = h("textarea", {
    class: "input",
    rows: "3",
    placeholder: "The note, sent verbatim",
  });

  const drawLists = () => {
    files.replaceChildren(
      ...(project.files.length
        ? project.files.map((file) =>
            h(
              "li",
              {},
              icon("file-text", "small"),
              h("span", { class: "grow", text: file.name }),
              h("span", { class: "muted", text: fileDetails(file) }),
              removeButton(`Remove ${file.name}`, async () => {
                await api.deleteProjectFile(id, file.id);
                project.files = project.files.filter((f) => f.id !== file.id);
              }),
            ),
          )
        : [h("li", { class: "muted", text: "No files yet." })]),
    );
    notes.replaceChildren(
      ...(project.notes.length
        ? project.notes.map((note) =>
            h(
              "li",
              {},
              icon("pin", "small"),
              h("span", { class: "grow" }, h("strong", { text: note.title }), ` ${note.text}`),
              removeButton(`Remove the note ${note.title}`, async () => {
                await api.deleteProjectNote(id, note.id);
                project.notes = project.notes.filter((n) => n.id !== note.id);
              }),
            ),
          )
        : [h("li", { class: "muted", text: "No pinned notes yet." })]),
    );
  };
  const removeButton = (label, remove) =>
    h(
      "button",
      {
        type: "button",
        class: "icon-button",
        title: label,
        "aria-label": label,
        on: {
          click: async () => {
            try {
              await remove();
              drawLists();
              await changed();
            } catch (error) {
              notifyError("Could not remove it", error);
            }
          },
        },
      },
      icon("x", "small"),
    );

  picker.addEventListener("change", async () => {
    for (const file of picker.files ?? []) {
      const problem = precheck(file);
      if (problem) {
        notify({ kind: "error", title: "File not added", text: problem });
        continue;
      }
      try {
        const added = await api.addProjectFile(id, {
          name: file.name,
          mediaType: mediaTypeOf(file),
          data: await base64Of(file),
        });
        project.files = [...project.files, added];
      } catch (error) {
        notifyError(`Could not add ${file.name}`, error);
      }
    }
    picker.value = "";
    drawLists();
    await changed();
  });

  const addNote = async () => {
    const title = noteTitle.value.trim();
    const text = noteText.value.trim();
    if (!title || !text) {
      notify({ kind: "error", title: "A note needs a title and a text" });
      return;
    }
    try {
      const note = await api.addProjectNote(id, { title, text });
      project.notes = [...project.notes, note];
      noteTitle.value = "";
      noteText.value = "";
      drawLists();
      await changed();
    } catch (error) {
      notifyError("Could not pin the note", error);
    }
  };

  const recallSettings = () => {
    if (recallAcross.checked === (sharedCompaction.recall_conversations !== "off")) return {};
    const { recall_conversations: _dropped, ...rest } = sharedCompaction;
    const compaction = recallAcross.checked ? rest : { ...rest, recall_conversations: "off" };
    return { settings: { ...project.settings, compaction } };
  };
  const save = async () => {
    try {
      await api.updateProject(id, {
        name: name.value.trim() || project.name,
        instructions: instructions.value,
        model: model.value.trim() || null,
        ...recallSettings(),
      });
      dialog.close();
      await changed();
    } catch (error) {
      notifyError("Could not save the project", error);
    }
  };

  const exportIt = async () => {
    try {
      const { blob, filename } = await api.exportProject(id);
      const url = URL.createObjectURL(blob);
      const link = h("a", { href: url, download: filename, class: "offscreen" });
      document.body.appendChild(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (error) {
      notifyError("The export failed", error);
    }
  };

  // The models to pick from: the providers' lists and the configured ones.
  api
    .listModels()
    .then((listed) => {
      const names = new Set([
        ...listed.models.map((m) => m.id),
        ...Object.keys(state.settings?.models ?? {}),
      ]);
      choices.replaceChildren(...[...names].sort().map((name) => h("option", { value: name })));
    })
    .catch(() => {});
  const field = (label, control) =>
    h("label", { class: "field" }, h("span", { class: "field-label", text: label }), control);
  drawLists();
  const dialog = openModal({
    title: `Project “${project.name}”`,
    subtitle:
      "Its instructions, files and notes are sent with every call of each of its conversations (cached, never folded, at most a quarter of what the model can read).",
    id: "project-dialog",
    wide: true,
    body: h(
      "div",
      { class: "modal-body project-form" },
      field("Name", name),
      field("Instructions", instructions),
      field("Default model", model),
      choices,
      h(
        "label",
        { class: "check" },
        recallAcross,
        h("span", {
          text: "After a fold, the model in each of its conversations may search and read the project's other conversations (their messages, tool outputs and files' text).",
        }),
      ),
      h(
        "div",
        { class: "field" },
        h("span", {
          class: "field-label",
          text: "Files (PDF, or text: Markdown, CSV, JSON, code…; sent as text, so no images)",
        }),
        files,
        h(
          "button",
          {
            type: "button",
            class: "button",
            id: "project-add-file",
            on: { click: () => picker.click() },
          },
          icon("upload", "small"),
          " Add files",
        ),
        picker,
      ),
      h(
        "div",
        { class: "field" },
        h("span", { class: "field-label", text: "Pinned notes" }),
        notes,
        noteTitle,
        noteText,
        h("button", {
          type: "button",
          class: "button",
          id: "project-add-note",
          text: "Pin note",
          on: { click: addNote },
        }),
      ),
    ),
    foot: h(
      "div",
      { class: "modal-foot" },
      h("button", { type: "button", class: "button", text: "Export", on: { click: exportIt } }),
      h("span", { class: "spacer" }),
      h("button", {
        type: "button",
        class: "button",
        text: "Close",
        on: { click: () => dialog.close() },
      }),
      h("button", {
        type: "button",
        class: "button primary",
        dataset: { role: "confirm" },
        text: "Save",
        on: { click: save },
      }),
    ),
  });
}
