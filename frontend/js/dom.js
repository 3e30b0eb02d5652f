// Building DOM nodes without HTML strings.
//
// Text always goes in as text nodes, so nothing here can inject markup. The only place
// HTML is parsed is markdown.js, and that goes through DOMPurify first.

/**
 * Create an element. `props` keys: `class`, `text`, `dataset` (object), `on` (object of
 * event listeners), `hidden`, boolean/DOM properties prefixed with `.` (e.g. `.value`),
 * anything else becomes an attribute. Children may be nodes, strings, arrays or null.
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) {
      continue;
    }
    if (key === "class") {
      element.className = Array.isArray(value) ? value.filter(Boolean).join(" ") : value;
    } else if (key === "text") {
      element.textContent = String(value);
    } else if (key === "dataset") {
      Object.assign(element.dataset, value);
    } else if (key === "on") {
      for (const [type, listener] of Object.entries(value)) {
        element.addEventListener(type, listener);
      }
    } else if (key.startsWith(".")) {
      element[key.slice(1)] = value;
    } else if (value === true) {
      element.setAttribute(key, "");
    } else {
      element.setAttribute(key, String(value));
    }
  }
  append(element, children);
  return element;
}

function append(parent, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    if (Array.isArray(child)) {
      append(parent, child);
    } else if (child instanceof Node) {
      parent.appendChild(child);
    } else {
      parent.appendChild(document.createTextNode(String(child)));
    }
  }
}

/** A Lucide icon (drawn by CSS as a mask; see base.css). */
export function icon(name, extraClass = "") {
  return h("span", { class: ["icon", `i-${name}`, extraClass], "aria-hidden": "true" });
}

/**
 * The element with id `id`, which must exist; with `kind` (e.g. `HTMLInputElement`) it
 * must be one, and it is typed as one.
 * @template {HTMLElement} [T=HTMLElement]
 * @param {string} id
 * @param {new (...args: any[]) => T} [kind]
 * @returns {T}
 */
export function byId(id, kind) {
  const element = document.getElementById(id);
  if (!element) {
    throw new Error(`missing #${id}`);
  }
  if (kind && !(element instanceof kind)) {
    throw new Error(`#${id} is not a ${kind.name}`);
  }
  return /** @type {T} */ (element);
}

/** Copy text to the clipboard, falling back to a hidden textarea where the API is refused. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h("textarea", { class: "offscreen", ".value": text });
    document.body.appendChild(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    return ok;
  }
}

/** Show "Copied" on a copy button for a moment. */
export function flashCopied(button) {
  const label = button.querySelector(".label");
  const glyph = button.querySelector(".icon");
  glyph?.classList.replace("i-copy", "i-check");
  if (label) {
    label.textContent = "Copied";
  }
  setTimeout(() => {
    glyph?.classList.replace("i-check", "i-copy");
    if (label) {
      label.textContent = "Copy";
    }
  }, 1400);
}

/** The search's terms, as the server splits them (words with a letter or digit). */
export function searchTerms(query) {
  return (query ?? "").split(/\s+/).filter((term) => /[\p{L}\p{N}]/u.test(term));
}

/** Wrap each case-insensitive occurrence of `terms` in the text under `root` in <mark>. */
export function markTerms(root, terms) {
  const lowered = terms.map((term) => term.toLowerCase()).filter(Boolean);
  if (!lowered.length) {
    return 0;
  }
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) {
    nodes.push(walker.currentNode);
  }
  let marked = 0;
  for (const node of nodes) {
    const text = node.nodeValue;
    const lower = text.toLowerCase();
    const pieces = [];
    let position = 0;
    for (;;) {
      let next = -1;
      let length = 0;
      for (const term of lowered) {
        const at = lower.indexOf(term, position);
        if (at !== -1 && (next === -1 || at < next)) {
          next = at;
          length = term.length;
        }
      }
      if (next === -1) {
        break;
      }
      pieces.push(text.slice(position, next), h("mark", { text: text.slice(next, next + length) }));
      position = next + length;
      marked++;
    }
    if (pieces.length) {
      pieces.push(text.slice(position));
      node.replaceWith(...pieces);
    }
  }
  return marked;
}
