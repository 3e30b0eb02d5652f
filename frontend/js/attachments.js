// Files in a message: the tray of files waiting to be sent (under the composer and in the
// edit box: an attach button, paste, drag and drop, chips removable before sending), and
// the files of stored messages (thumbnails that open full size, chips that download).
//
// The server checks every file (type, bytes, the model, the providers' limits) and its
// refusal is shown as a notice; the checks here only spare an upload that cannot work.
// Stored files are fetched with the access token and shown as data URLs: the page's
// Content-Security-Policy allows images from this server and `data:` only.

import { api } from "./api.js";
import { h, icon } from "./dom.js";
import { notify, notifyError } from "./notices.js";
import { state } from "./state.js";

/** As many files as the server takes in one message. */
export const MAX_FILES = 20;
const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const TEXT_TYPES = new Set([
  "application/json",
  "application/xml",
  "application/javascript",
  "application/typescript",
  "application/x-yaml",
  "application/yaml",
  "application/toml",
  "application/x-sh",
  "application/sql",
]);
const TEXT_EXTENSIONS =
  /\.(txt|md|markdown|rst|csv|tsv|json|jsonl|ya?ml|toml|ini|cfg|conf|xml|html?|css|log|py|m?js|tsx?|jsx|java|kt|go|rs|c|h|cc|cpp|hpp|cs|rb|php|swift|scala|sh|bash|zsh|sql|r|lua|pl|hs|exs?|erl|clj|dart|vue|svelte|tex|diff|patch|env|proto|graphql)$/i;
/** The largest file worth sending: 32 MB of files fit in one provider request. */
const MAX_BYTES = 32 * 1024 * 1024;

/** "chart.png" 12345 -> "12 KB". */
export function formatSize(bytes) {
  if (bytes === null || bytes === undefined) {
    return "";
  }
  if (bytes < 1024) {
    return `${bytes} B`;
  }
  if (bytes < 1024 * 1024) {
    return `${Math.round(bytes / 1024)} KB`;
  }
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** The type the server is told: the browser's, else `application/octet-stream`. */
export function mediaTypeOf(file) {
  return file.type || "application/octet-stream";
}

/**
 * The image type the bytes themselves are (their first bytes), or "" when they are no
 * image Foldline sends: a file is drawn as a thumbnail only when it is one, whatever its
 * name or the type the system guessed from it.
 * @param {Uint8Array} head the file's first bytes (12 are enough)
 */
export function imageTypeOfBytes(head) {
  const starts = (...bytes) => bytes.every((byte, index) => head[index] === byte);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) {
    return "image/png";
  }
  if (starts(0xff, 0xd8, 0xff)) {
    return "image/jpeg";
  }
  if (starts(0x47, 0x49, 0x46, 0x38)) {
    return "image/gif";
  }
  const webp = [0x57, 0x45, 0x42, 0x50].every((byte, index) => head[8 + index] === byte);
  if (starts(0x52, 0x49, 0x46, 0x46) && webp) {
    return "image/webp";
  }
  return "";
}

/**
 * The media type to send for a file read as a data URL: an image type only when the
 * bytes are that image; a file named like an image that holds text goes as text (a file
 * chip, as the server would store it), never as a broken thumbnail.
 * @param {string} type what the name or the system said
 * @param {string} dataUrl
 */
export function contentMediaType(type, dataUrl) {
  const base64 = dataUrl.slice(dataUrl.indexOf(",") + 1, dataUrl.indexOf(",") + 1 + 4096);
  let head;
  try {
    head = Uint8Array.from(atob(base64.slice(0, base64.length - (base64.length % 4))), (c) =>
      c.charCodeAt(0),
    );
  } catch {
    return type;
  }
  const image = imageTypeOfBytes(head);
  if (image) {
    return image;
  }
  if (!IMAGE_TYPES.has(type)) {
    return type;
  }
  // Named as an image but not one: text when its start has no control bytes but blanks.
  const textual = head.every((byte) => byte >= 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d);
  return textual ? "text/plain" : type;
}

/** Why a file cannot be sent at all, or "" (the server decides the rest). */
export function precheck(file) {
  const type = mediaTypeOf(file);
  const known =
    IMAGE_TYPES.has(type) ||
    type === "application/pdf" ||
    type.startsWith("text/") ||
    TEXT_TYPES.has(type) ||
    TEXT_EXTENSIONS.test(file.name);
  if (!known) {
    return `${file.name}: files of type ${type} are not accepted; attach an image (PNG, JPEG, GIF, WebP), a PDF or a text file.`;
  }
  if (file.size === 0) {
    return `${file.name}: the file is empty.`;
  }
  if (file.size > MAX_BYTES) {
    return `${file.name}: ${formatSize(file.size)} is over the 32 MB a request may carry.`;
  }
  return "";
}

function readAsDataUrl(blob) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(blob);
  });
}

/** Stored files as data URLs, by conversation and sha256 (they never change). */
const stored = new Map();

function storedDataUrl(conversationId, sha256) {
  const key = `${conversationId}/${sha256}`;
  if (!stored.has(key)) {
    const loading = api
      .attachment(conversationId, sha256)
      .then((blob) => readAsDataUrl(blob))
      .catch((error) => {
        stored.delete(key);
        throw error;
      });
    stored.set(key, loading);
  }
  return stored.get(key);
}

function fileDetails(part) {
  const details = [formatSize(part.size)];
  if (part.width && part.height) {
    details.push(`${part.width}×${part.height}`);
  }
  if (part.pages) {
    details.push(`${part.pages} page${part.pages === 1 ? "" : "s"}`);
  }
  return details.filter(Boolean).join(" · ");
}

// ---- the tray of files to send ---------------------------------------------------------

/**
 * Files waiting to be sent with a message. `kept` are the stored files of a message
 * being edited (they stay unless removed, and are not uploaded again). `onChange` runs
 * after every change. `attachments()` gives the new files as the API takes them, `keep()`
 * the sha256s of the kept ones.
 */
export function fileTray({ kept = [], onChange = () => {} } = {}) {
  /** @type {Array<{name: string, mediaType: string, size: number, dataBase64?: string, thumb?: string|null, sha256?: string, part?: AttachmentPartOut}>} */
  const items = kept
    .filter((part) => part.sha256)
    .map((part) => ({
      name: part.name,
      mediaType: part.mediaType,
      size: part.size ?? 0,
      sha256: part.sha256,
      part,
    }));
  const element = h("ul", { class: "file-tray", "aria-label": "Files to send" });
  const input = h("input", {
    type: "file",
    multiple: true,
    class: "file-input",
    tabindex: "-1",
    "aria-hidden": "true",
  });
  input.addEventListener("change", () => {
    const files = [...(input.files ?? [])];
    input.value = "";
    add(files);
  });

  function chip(item) {
    const image = IMAGE_TYPES.has(item.mediaType);
    const thumb = image
      ? h("img", { class: "file-thumb", alt: "", src: item.thumb ?? undefined })
      : h("span", { class: "file-icon" }, icon("file-text", "small"));
    if (image && !item.thumb && item.sha256 && state.currentId) {
      storedDataUrl(state.currentId, item.sha256).then(
        (url) => (thumb.src = url),
        () => {},
      );
    }
    const remove = h(
      "button",
      {
        type: "button",
        class: "file-remove icon-button small",
        title: `Remove ${item.name}`,
        "aria-label": `Remove ${item.name}`,
        on: {
          click: () => {
            items.splice(items.indexOf(item), 1);
            draw();
            onChange();
          },
        },
      },
      icon("x", "small"),
    );
    return h(
      "li",
      { class: "file-chip", dataset: { name: item.name } },
      thumb,
      h(
        "span",
        { class: "file-text" },
        h("span", { class: "file-name", text: item.name, title: item.name }),
        h("span", { class: "file-size", text: formatSize(item.size) }),
      ),
      remove,
    );
  }

  function draw() {
    element.replaceChildren(...items.map(chip));
    element.hidden = items.length === 0;
  }

  async function add(files) {
    for (const file of files) {
      if (items.length >= MAX_FILES) {
        notify({
          kind: "warn",
          title: "Too many files",
          text: `A message takes at most ${MAX_FILES} files.`,
        });
        break;
      }
      const problem = precheck(file);
      if (problem) {
        notify({ kind: "error", title: "File not attached", text: problem });
        continue;
      }
      let url;
      try {
        url = await readAsDataUrl(file);
      } catch (error) {
        notifyError(`Could not read ${file.name}`, error);
        continue;
      }
      const type = contentMediaType(mediaTypeOf(file), url);
      items.push({
        name: file.name || "pasted-image.png",
        mediaType: type,
        size: file.size,
        dataBase64: url.slice(url.indexOf(",") + 1),
        thumb: IMAGE_TYPES.has(type) ? url : null,
      });
    }
    draw();
    onChange();
  }

  draw();
  return {
    element,
    input,
    add,
    pick: () => input.click(),
    count: () => items.length,
    /** @returns {Array<{name: string, mediaType: string, dataBase64: string}>} */
    attachments: () =>
      items
        .filter((item) => item.dataBase64 !== undefined)
        .map((item) => ({
          name: item.name,
          mediaType: item.mediaType,
          dataBase64: item.dataBase64 ?? "",
        })),
    keep: () => items.filter((item) => item.sha256).map((item) => item.sha256 ?? ""),
    /** What the pending copy of the message shows until the server's copy arrives. */
    parts: () =>
      items.map((item) => ({
        kind: "attachment",
        name: item.name,
        mediaType: item.mediaType,
        size: item.size,
        sha256: item.sha256 ?? null,
        thumb: item.thumb ?? null,
      })),
    clear() {
      items.length = 0;
      draw();
      onChange();
    },
  };
}

/**
 * The attach button that opens the file picker of `tray`.
 * @param {ReturnType<typeof fileTray>} tray
 * @param {{id?: string}} [options]
 */
export function attachButton(tray, { id } = {}) {
  return h(
    "button",
    {
      type: "button",
      class: "attach-button",
      id,
      title: "Attach files (or paste, or drop them here)",
      "aria-label": "Attach files",
      on: { click: () => tray.pick() },
    },
    icon("paperclip"),
  );
}

/** Files pasted into or dropped onto `target` go to `tray`. */
export function acceptFiles(target, tray) {
  // A nested target (a message's editor) takes its files first; an outer one (the whole
  // window, for the composer) leaves them to it.
  target.addEventListener("paste", (event) => {
    if (event.defaultPrevented) {
      return;
    }
    const files = [...(event.clipboardData?.files ?? [])];
    if (files.length) {
      event.preventDefault();
      tray.add(files);
    }
  });
  const carriesFiles = (event) => [...(event.dataTransfer?.types ?? [])].includes("Files");
  target.addEventListener("dragover", (event) => {
    if (carriesFiles(event)) {
      event.preventDefault();
      target.classList.add("dropping");
    }
  });
  target.addEventListener("dragleave", (event) => {
    if (!target.contains(/** @type {Node|null} */ (event.relatedTarget))) {
      target.classList.remove("dropping");
    }
  });
  target.addEventListener("drop", (event) => {
    target.classList.remove("dropping");
    if (event.defaultPrevented) {
      return;
    }
    const files = [...(event.dataTransfer?.files ?? [])];
    if (files.length) {
      event.preventDefault();
      tray.add(files);
    }
  });
}

// ---- files of stored messages ----------------------------------------------------------

function openFull(name, url) {
  const close = () => {
    overlay.remove();
    document.removeEventListener("keydown", onKey, true);
  };
  const onKey = (event) => {
    if (event.key === "Escape") {
      event.stopPropagation();
      close();
    }
  };
  const overlay = h(
    "div",
    {
      class: "lightbox",
      role: "dialog",
      "aria-modal": "true",
      "aria-label": name,
      on: { click: close },
    },
    h("img", { src: url, alt: name }),
    h("div", { class: "lightbox-name", text: name }),
  );
  document.addEventListener("keydown", onKey, true);
  document.body.append(overlay);
}

async function download(part) {
  const conversationId = state.currentId;
  if (!conversationId || !part.sha256) {
    return;
  }
  try {
    const url = await storedDataUrl(conversationId, part.sha256);
    h("a", { href: url, download: part.name }).click();
  } catch (error) {
    notifyError(`Could not open ${part.name}`, error);
  }
}

/**
 * One file of a stored message: an image as a thumbnail that opens full size, any other
 * file as a chip (name, size, pages) that downloads it. A file still being sent shows
 * its local thumbnail. A tool's attachment (no sha256) is a plain badge.
 * @param {AttachmentPartOut & {thumb?: string|null}} part
 */
export function renderFilePart(part) {
  const conversationId = state.currentId;
  const image = IMAGE_TYPES.has(part.mediaType);
  if (image && (part.sha256 || part.thumb)) {
    const img = h("img", { alt: part.name, src: part.thumb ?? undefined });
    const button = h(
      "button",
      {
        type: "button",
        class: "file-preview",
        title: `${part.name} · ${fileDetails(part)} (click for full size)`,
        dataset: { name: part.name },
      },
      img,
    );
    if (!part.thumb && part.sha256 && conversationId) {
      storedDataUrl(conversationId, part.sha256).then(
        (url) => {
          img.src = url;
          button.addEventListener("click", () => openFull(part.name, url));
        },
        () => img.replaceWith(icon("image")),
      );
    }
    return button;
  }
  if (!part.sha256 && !part.thumb && part.size === undefined) {
    return h("span", { class: "badge" }, icon("file-text", "small"), part.name || "attachment");
  }
  return h(
    "button",
    {
      type: "button",
      class: "file-chip stored",
      title: `Download ${part.name}`,
      dataset: { name: part.name },
      on: { click: () => download(part) },
    },
    h("span", { class: "file-icon" }, icon("file-text", "small")),
    h(
      "span",
      { class: "file-text" },
      h("span", { class: "file-name", text: part.name }),
      h("span", { class: "file-size", text: fileDetails(part) }),
    ),
  );
}
