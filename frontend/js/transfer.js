// Export (Markdown, JSON) and import (the JSON export back in).

import { api } from "./api.js";
import { h } from "./dom.js";
import { notify, notifyError } from "./notices.js";

/** Download the open conversation in `format` ("markdown" or "json"). */
export async function exportConversation(id, format) {
  try {
    const { blob, filename } = await api.exportConversation(id, format);
    const url = URL.createObjectURL(blob);
    const link = h("a", { href: url, download: filename, class: "offscreen" });
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    notify({ kind: "success", title: "Exported", text: filename });
  } catch (error) {
    notifyError("The export failed", error);
  }
}

/** Import a JSON export chosen by the person; resolves the new conversation or null. */
export async function importFile(file) {
  let document;
  try {
    document = JSON.parse(await file.text());
  } catch {
    notify({ kind: "error", title: "Not a Foldline export", text: `${file.name} is not JSON.` });
    return null;
  }
  try {
    if (document?.format === "foldline.project") {
      const project = await api.importProject(document);
      const count = `${project.conversationCount} conversation(s)`;
      notify({ kind: "success", title: "Project imported", text: `${project.name}: ${count}` });
      return null;
    }
    const conversation = await api.importConversation(document);
    notify({ kind: "success", title: "Imported", text: conversation.title ?? file.name });
    // Something the import changed to make the conversation work (pins over their cap).
    if (conversation.notice) {
      notify({ kind: "warn", title: "Imported with a change", text: conversation.notice });
    }
    return conversation;
  } catch (error) {
    notifyError("The import failed", error);
    return null;
  }
}
