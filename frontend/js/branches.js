// Versions of a conversation: editing the person's message, regenerating an answer, and
// switching between the versions of a message (its siblings in the message tree).
//
// The history on screen is always one path through the tree, from the first message to
// the active leaf. An edit or a regeneration starts a new branch at that message and
// makes it the active path; the switcher (`‹ 2 / 3 ›`) makes another version's branch
// active again, at its newest message. After a switch the history, its fold lines, the
// meter and the pinned bar are all re-read for the new path.

import { api } from "./api.js";
import { app } from "./app.js";
import { messageEditor, siblingAt } from "./branch-controls.js";
import * as chat from "./chat.js";
import { formatTokens } from "./format.js";
import { messageText } from "./messages.js";
import { notify, notifyError } from "./notices.js";
import { offsetInView } from "./reader-place.js";
import { apiStartIndex, state } from "./state.js";
import { editMessage, isRunning, regenerate } from "./turn.js";

/** Busy conversations refuse a new branch (409); say so before asking the server. */
function refuseWhileBusy() {
  if (!isRunning() && !state.busy) {
    return false;
  }
  notify({
    kind: "info",
    title: "An answer is still running",
    text: "Wait for it to finish, or stop it, before editing, regenerating or switching versions.",
  });
  return true;
}

/**
 * The warning an edit of a folded message shows before it is sent.
 * @param {EditPreview} preview
 */
function foldWarning(preview) {
  const size = preview.contextWindow
    ? ` of its ${formatTokens(preview.contextWindow)}-token window`
    : "";
  const text = `The model will see the earlier context again (${formatTokens(preview.viewTokens)} tokens${size}).`;
  const dropped = preview.foldsDropped
    ? ` This message is folded: the new version starts a branch without the ${
        preview.foldsDropped === 1
          ? "fold that covers it"
          : `${preview.foldsDropped} folds that cover it`
      }${preview.foldsKept ? " (earlier folds still apply)" : ""}.`
    : "";
  return text + dropped;
}

/**
 * Open the inline editor on the person's message. For a folded message it first asks the
 * server what the edit would do to the model's view, and says so before it can be sent.
 * @param {MessageOut} message
 */
export function startEdit(message, element) {
  if (refuseWhileBusy() || !element || element.querySelector(".message-editor")) {
    return;
  }
  const conversationId = state.currentId;
  const text = messageText(message);
  // For a folded message: resolves once the warning is on screen.
  let preview = null;
  let warned = false;
  const close = () => {
    chat.redrawMessage(message.index);
    /** @type {HTMLElement|null} */ (
      chat.messageElement(message.index)?.querySelector(".edit-button")
    )?.focus();
  };
  const files = (message.parts ?? []).filter((part) => part.kind === "attachment");
  const editor = messageEditor(text, {
    files,
    onCancel: close,
    onSend: async (content, attached) => {
      if (refuseWhileBusy()) {
        return;
      }
      // The warning must have been on screen before a folded message's edit goes out:
      // a press that comes before it only shows it, and the next one sends.
      const seen = warned;
      editor.busy(true);
      await preview;
      if (warned && !seen) {
        editor.busy(false);
        return;
      }
      const sent = await editMessage(message, content, attached);
      if (!sent && element.isConnected) {
        editor.busy(false);
      }
    },
  });
  // The editor takes the place of the text and the files (it holds both).
  element.querySelector(".attachments")?.remove();
  const bubble = element.querySelector(".bubble");
  if (bubble) {
    bubble.replaceWith(editor.element);
  } else {
    element.prepend(editor.element);
  }
  element.querySelector(".message-meta")?.remove();
  editor.focus();
  // The current fold says what is folded now (a message's `inContext` may predate it).
  if (message.index < apiStartIndex()) {
    const warn = (note) => {
      editor.warning(note);
      warned = true;
    };
    preview = api.editPreview(conversationId, message.id).then(
      (result) => result?.folded && warn(foldWarning(result)),
      () =>
        warn(
          "This message is folded: the model will see the earlier context again (its size could not be checked).",
        ),
    );
  }
}

/** @param {MessageOut} message */
export function startRegenerate(message) {
  if (!refuseWhileBusy()) {
    regenerate(message);
  }
}

/**
 * Show the previous (`step` -1) or next (+1) version of `message`: its branch becomes the
 * active path, and the history is re-read around the message, which stays where it was
 * on screen; the focus stays on the same arrow for the keyboard.
 * @param {MessageOut} message
 */
export async function switchVersion(message, step) {
  const target = siblingAt(message, step);
  const conversationId = state.currentId;
  if (!target || !conversationId || refuseWhileBusy()) {
    return;
  }
  const element = chat.messageElement(message.index);
  const offset = element ? offsetInView(element) : null;
  try {
    await api.setActiveLeaf(conversationId, target);
  } catch (error) {
    notifyError("Could not switch to that version", error);
    return;
  }
  // The list shows the message count of each conversation's active path.
  await Promise.all([
    app.open(conversationId, { at: message.index, offset }),
    app.refreshList(),
  ]);
  // The arrow pressed, or the other one once the end of the versions is reached.
  const arrow = step < 0 ? ".previous" : ".next";
  const arrows = /** @type {NodeListOf<HTMLButtonElement>|[]} */ (
    chat.messageElement(message.index)?.querySelectorAll(".version-step") ?? []
  );
  const enabled = [...arrows].filter((button) => !button.disabled);
  const button = enabled.find((candidate) => candidate.matches(arrow)) ?? enabled[0];
  button?.focus();
}
