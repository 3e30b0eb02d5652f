// Projects in the sidebar: conversations grouped by project (each group collapsible),
// "No project" for the rest; create, rename and delete a project; move a conversation by
// its menu or by dragging it onto a group. A project's instructions, files and notes are
// edited in its dialog (project-dialog.js).

import { api } from "./api.js";
import { app } from "./app.js";
import { confirmDialog, openModal, promptDialog } from "./dialog.js";
import { byId, h, icon } from "./dom.js";
import { plural } from "./format.js";
import { notify, notifyError } from "./notices.js";
import { openProjectDialog } from "./project-dialog.js";
import { emit, on, state, update } from "./state.js";

const COLLAPSED_KEY = "foldline.collapsedProjects";
const DRAG_TYPE = "application/x-foldline-conversation";

/** Ids of the collapsed groups ("" = No project), kept across reloads. */
const collapsed = new Set(readCollapsed());

function readCollapsed() {
  try {
    return JSON.parse(localStorage.getItem(COLLAPSED_KEY) || "[]");
  } catch {
    return [];
  }
}

export function initProjects() {
  byId("new-project").addEventListener("click", () => createProject());
  on("conversation", () => showDraftIn(state.draftProjectId));
}

const COMPOSER_PLACEHOLDER = "Message Foldline";

/** The empty composer starts a conversation in project `id` (null: in none). */
export function showDraftIn(id) {
  const project = state.currentId ? undefined : projectOf(id);
  update({ draftProjectId: project?.id ?? null });
  byId("composer-input", HTMLTextAreaElement).placeholder = project
    ? `New conversation in “${project.name}”…`
    : COMPOSER_PLACEHOLDER;
}

/** Load the projects (for the groups); an error leaves the last list. */
export async function loadProjects() {
  try {
    update({ projects: await api.listProjects() });
  } catch (error) {
    notifyError("Could not load the projects", error);
  }
  return state.projects;
}

/** @param {string|null|undefined} id @returns {ProjectOut|undefined} */
export function projectOf(id) {
  return (state.projects ?? []).find((project) => project.id === id);
}

/**
 * The sidebar's children: one collapsible group per project, then "No project" drawn by
 * `renderRest` (the day groups). Without any project the list is drawn as before.
 * @param {ConversationOut[]} items
 */
export function projectGroups(items, renderItem, renderRest) {
  const projects = state.projects ?? [];
  if (!projects.length) {
    return renderRest(items);
  }
  const groups = [];
  for (const project of projects) {
    const members = items.filter((c) => c.projectId === project.id);
    // A search shows only the groups holding a result.
    if (members.length || !state.query) {
      groups.push(group(project, members, renderItem));
    }
  }
  const rest = items.filter((c) => !projectOf(c.projectId));
  groups.push(group(null, rest, renderRest));
  return groups;
}

/** @param {ProjectOut|null} project @param {ConversationOut[]} items */
function group(project, items, render) {
  const key = project?.id ?? "";
  const isCollapsed = collapsed.has(key) && !state.query;
  const name = project ? project.name : "No project";
  const count = project && !state.query ? project.conversationCount : items.length;
  const toggle = h(
    "button",
    {
      type: "button",
      class: "project-toggle",
      "aria-expanded": String(!isCollapsed),
      title: isCollapsed ? "Show its conversations" : "Hide its conversations",
      on: { click: () => setCollapsed(key, !isCollapsed) },
    },
    icon(isCollapsed ? "chevron-right" : "chevron-down", "small"),
    project ? icon("folder", "small") : null,
    h("span", { class: "project-name", text: name }),
    h("span", { class: "project-count", text: String(count) }),
  );
  const actions = project
    ? h(
        "span",
        { class: "project-actions" },
        actionButton("plus", "New conversation in this project", () => app.startDraftIn(project)),
        actionButton("file-text", "Instructions, files and notes", () =>
          openProjectDialog(project.id, { changed: app.projectsChanged }),
        ),
        actionButton("pencil", "Rename project", () => renameProject(project)),
        actionButton("trash-2", "Delete project", () => deleteProject(project)),
      )
    : null;
  let body = [];
  if (!isCollapsed) {
    const empty = project ? "Drop conversations here." : "None.";
    if (!items.length) {
      body = [h("div", { class: "project-empty", text: empty })];
    } else {
      body = project ? items.map(render) : render(items);
    }
  }
  const section = h(
    "section",
    {
      class: ["project-group", project ? "" : "no-project"],
      dataset: { projectId: key },
      "aria-label": project ? `Project ${name}` : "No project",
    },
    h("div", { class: "project-head" }, toggle, actions),
    ...body,
  );
  acceptDrops(section, project);
  return section;
}

function actionButton(name, label, action) {
  return h(
    "button",
    {
      type: "button",
      class: "icon-button",
      title: label,
      "aria-label": label,
      on: {
        click: (event) => {
          event.stopPropagation();
          action();
        },
      },
    },
    icon(name, "small"),
  );
}

function setCollapsed(key, value) {
  if (value) {
    collapsed.add(key);
  } else {
    collapsed.delete(key);
  }
  localStorage.setItem(COLLAPSED_KEY, JSON.stringify([...collapsed]));
  emit("conversations", state.conversations);
}

/** A conversation item can be dragged onto a group. @param {ConversationOut} conversation */
export function makeDraggable(item, conversation) {
  item.draggable = true;
  item.addEventListener("dragstart", (event) => {
    event.dataTransfer.setData(DRAG_TYPE, conversation.id);
    event.dataTransfer.effectAllowed = "move";
    item.classList.add("dragging");
  });
  item.addEventListener("dragend", () => item.classList.remove("dragging"));
}

function acceptDrops(section, project) {
  section.addEventListener("dragover", (event) => {
    if (event.dataTransfer.types.includes(DRAG_TYPE)) {
      event.preventDefault();
      event.dataTransfer.dropEffect = "move";
      section.classList.add("drop-target");
    }
  });
  section.addEventListener("dragleave", (event) => {
    if (!section.contains(/** @type {Node} */ (event.relatedTarget))) {
      section.classList.remove("drop-target");
    }
  });
  section.addEventListener("drop", (event) => {
    section.classList.remove("drop-target");
    const id = event.dataTransfer.getData(DRAG_TYPE);
    if (id) {
      event.preventDefault();
      moveConversation(id, project?.id ?? null);
    }
  });
}

/** The "Move to project" button of a conversation's menu. @param {ConversationOut} conversation */
export function moveButton(conversation) {
  if (!(state.projects ?? []).length) {
    return null;
  }
  return actionButton("folder-input", "Move to project", () => chooseProject(conversation));
}

/**
 * Ask which project the conversation goes to (the row's button, the ⋯ menu).
 * @param {ConversationOut} conversation
 */
export function chooseProject(conversation) {
  const choices = [...(state.projects ?? []), null].map((project) =>
    h("button", {
      type: "button",
      class: ["button", "project-choice"],
      disabled: (project?.id ?? null) === (conversation.projectId ?? null),
      text: project ? project.name : "No project",
      on: {
        click: () => {
          dialog.close();
          moveConversation(conversation.id, project?.id ?? null);
        },
      },
    }),
  );
  const dialog = openModal({
    title: "Move to project",
    subtitle: `“${conversation.title || "Untitled"}”: its history stays as it is; it sends the chosen project's instructions and files from its next message on.`,
    body: h(
      "div",
      { class: "modal-body project-choices" },
      (state.projects ?? []).length
        ? null
        : h("p", { text: "No project yet: create one with the folder button above the list." }),
      ...choices,
    ),
    id: "move-dialog",
  });
}

/** Move a conversation (null: to no project) and redraw what depends on it. */
export async function moveConversation(id, projectId) {
  const conversation = state.conversations.find((c) => c.id === id);
  if (conversation && (conversation.projectId ?? null) === projectId) {
    return;
  }
  try {
    const updated = await api.updateConversation(id, { projectId });
    const where = projectOf(projectId)?.name ?? "No project";
    notify({ kind: "success", title: "Moved", text: `“${updated.title}” → ${where}` });
    if (state.conversation?.id === id) {
      update({ conversation: { ...state.conversation, projectId: updated.projectId } });
    }
    await app.projectsChanged();
  } catch (error) {
    notifyError("Could not move the conversation", error);
  }
}

async function createProject() {
  const name = await promptDialog({ title: "New project", label: "Name", confirmLabel: "Create" });
  if (!name) {
    return;
  }
  try {
    const project = await api.createProject({ name });
    await app.projectsChanged();
    openProjectDialog(project.id, { changed: app.projectsChanged });
  } catch (error) {
    notifyError("Could not create the project", error);
  }
}

/** @param {ProjectOut} project */
async function renameProject(project) {
  const name = await promptDialog({ title: "Rename project", label: "Name", value: project.name });
  if (!name || name === project.name) {
    return;
  }
  try {
    await api.updateProject(project.id, { name });
    await app.projectsChanged();
  } catch (error) {
    notifyError("Could not rename the project", error);
  }
}

/**
 * Delete a project. Its conversations move to "No project" unless the person chooses to
 * delete them too, which a second confirmation states with their number.
 * @param {ProjectOut} project
 */
export async function deleteProject(project) {
  const count = project.conversationCount;
  const choice = await new Promise((resolve) => {
    let answer = null;
    const choose = (value) => () => {
      answer = value;
      dialog.close();
    };
    const dialog = openModal({
      title: `Delete the project “${project.name}”?`,
      id: "delete-project-dialog",
      body: h(
        "div",
        { class: "modal-body" },
        h("p", {
          text: count
            ? `It holds ${plural(count, "conversation")}. Keep them (they move to “No project”, whole), or delete them too. Its instructions, files and notes are deleted either way.`
            : "It holds no conversation. Its instructions, files and notes are deleted.",
        }),
      ),
      foot: h(
        "div",
        { class: "modal-foot" },
        h("button", {
          type: "button",
          class: "button",
          text: "Cancel",
          on: { click: choose(null) },
        }),
        count
          ? h("button", {
              type: "button",
              class: "button danger",
              dataset: { role: "delete-all" },
              text: `Delete with its ${plural(count, "conversation")}`,
              on: { click: choose("delete") },
            })
          : null,
        h("button", {
          type: "button",
          class: "button primary",
          dataset: { role: "confirm" },
          text: count ? "Delete project, keep conversations" : "Delete project",
          on: { click: choose("move") },
        }),
      ),
      onClose: () => resolve(answer),
    });
  });
  if (!choice) {
    return;
  }
  if (choice === "delete") {
    const sure = await confirmDialog({
      title: `Delete ${plural(count, "conversation")}?`,
      text: `The ${plural(count, "conversation")} of “${project.name}” and their whole histories will be deleted. This cannot be undone; export the project first to keep a copy.`,
      confirmLabel: `Delete ${plural(count, "conversation")}`,
      danger: true,
    });
    if (!sure) {
      return;
    }
  }
  const members = state.conversations.filter((c) => c.projectId === project.id).map((c) => c.id);
  try {
    const result = await api.deleteProject(
      project.id,
      choice,
      choice === "delete" ? count : undefined,
    );
    notify({
      kind: "success",
      title: "Project deleted",
      text: result.deleted
        ? `${plural(result.deleted, "conversation")} deleted with it.`
        : `${plural(result.moved, "conversation")} moved to “No project”.`,
    });
    await app.projectsChanged();
    if (choice === "delete" && members.includes(state.currentId)) {
      app.showEmptyState();
    }
  } catch (error) {
    notifyError("Could not delete the project", error);
  }
}
