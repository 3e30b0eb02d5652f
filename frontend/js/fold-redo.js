// Redo of an undone fold: the stored summary comes back without a new model call, as
// long as nothing was folded since and what it summarized is unchanged (the server
// checks; GET …/compactions names the fold as `redoVersion`). Offered in the notice an
// undo shows, and in the Compact dialog for as long as it stays possible.

import { api } from "./api.js";
import { h, icon } from "./dom.js";
import { notify, notifyError } from "./notices.js";

/** Make fold `version` of conversation `id` current again; `after()` redraws. */
export async function redoFold(id, version, after) {
  try {
    await api.redoCompaction(id, version);
    notify({
      kind: "success",
      title: `Fold v${version} is back`,
      text: "Its summary was kept: no new model call was needed.",
    });
  } catch (error) {
    notifyError("The fold could not be brought back", error);
  }
  await after();
}

/**
 * A line for the Compact dialog when an undone fold can come back; null otherwise.
 * `done()` runs after the redo (it closes the dialog and redraws).
 */
export async function redoOffer(id, done) {
  let version = null;
  try {
    version = (await api.compactionList(id)).redoVersion;
  } catch {
    return null;
  }
  if (!version) {
    return null;
  }
  const button = h(
    "button",
    { type: "button", class: "button", id: "redo-fold" },
    icon("layers", "small"),
    `Bring back fold v${version}`,
  );
  button.addEventListener("click", async () => {
    button.disabled = true;
    await redoFold(id, version, done);
  });
  return h(
    "div",
    { class: "redo-offer" },
    h("span", {
      text: `Fold v${version} was undone and still fits this history: bring it back as it was, without writing a new summary.`,
    }),
    button,
  );
}
