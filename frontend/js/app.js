// The app's actions, in one place: open a conversation, re-read what the views show of
// it, start a draft, fold, retry, edit. main.js provides them once, before any view is
// set up (`provideApp`), from the modules that do them (opening.js, turn.js, branches.js
// and its own). A view calls `app.open(...)` instead of importing opening.js: the views
// sit below opening.js and main.js in the import graph (opening.js imports the sidebar,
// the meter, the turns), and importing back up would make a cycle.

/**
 * Where to open a conversation (opening.js `openConversation`): at its newest message, or
 * at message `at` with search `terms` marked or `offset` pixels below the top of the view;
 * with `branchOf`, the branch holding that message is shown first.
 * @typedef {Object} Opening
 * @property {boolean} [quietIfMissing] A conversation deleted meanwhile leaves the start
 *   screen without a notice.
 * @property {number|null} [at]
 * @property {string[]} [terms]
 * @property {number|null} [offset]
 * @property {string|null} [branchOf]
 */

/**
 * @typedef {Object} AppActions
 * @property {(id: string, opening?: Opening) => Promise<void>} open Open a conversation.
 * @property {() => void} startDraft "+": an empty composer; nothing is stored until the
 *   first message is sent.
 * @property {(project: ProjectOut) => void} startDraftIn A draft in a project.
 * @property {() => void} showEmptyState The start screen, no conversation open.
 * @property {(id: string) => void} conversationDeleted A conversation was deleted here.
 * @property {() => Promise<void>} refreshList Read the sidebar's list again.
 * @property {() => Promise<void>} refreshFolds Read the open conversation's fold versions
 *   again.
 * @property {() => Promise<void>} refreshContext Count the open conversation's context
 *   again (the meter).
 * @property {() => Promise<void>} foldsChanged A fold landed: the folds, then the
 *   conversation.
 * @property {(options?: {ifChanged?: boolean}) => Promise<void>} reread Show what is
 *   stored now of the open conversation after a change made elsewhere.
 * @property {() => Promise<void>} projectsChanged A project was created, changed, or
 *   deleted, or a conversation moved between projects.
 * @property {() => void} compactNow Open the "Fold now" dialog.
 * @property {() => Promise<boolean>} retry Run the model again after a failed answer.
 * @property {(fold: CompactionVersionOut) => Promise<void>} undoFold
 * @property {(message: MessageOut, element: HTMLElement) => void} edit Edit a person's
 *   message in place.
 * @property {(message: MessageOut) => void} regenerate A new answer in place of one.
 * @property {(message: MessageOut, step: number) => Promise<void>} switchVersion Show
 *   another version of a message.
 */

/**
 * The app's actions (filled by `provideApp`; calling one before is a bug).
 * @type {AppActions}
 */
export const app = /** @type {AppActions} */ ({});

/** @param {AppActions} actions */
export function provideApp(actions) {
  Object.assign(app, actions);
}
