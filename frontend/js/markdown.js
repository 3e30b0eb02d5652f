// Markdown from a model or a tool, rendered and then sanitized.
//
// Everything a model or a tool returns is untrusted. marked turns it into HTML, DOMPurify
// turns that HTML into a DOM fragment with no scripts, no event handlers, no forms or
// frames, no inline styles and no ids or data attributes that could spoof or clobber the
// app's own elements. Only then does it reach the page. Code is highlighted after
// sanitizing, and highlight.js's output is sanitized again by a second, stricter purifier
// that allows nothing but <span class="hljs-...">.

import { Marked } from "../vendor/marked/marked.esm.js";
import DOMPurify from "../vendor/dompurify/purify.es.js";
import { copyText, flashCopied, h, icon } from "./dom.js";

// The highlighter is the largest module (130 kB, about 30 ms to compile and set up its
// languages) and no block is highlighted before it nears the screen, so it loads beside
// the page (index.html preloads it) instead of before the app's first request.
const highlighter = import("../vendor/highlight/highlight.min.js").then(
  (module) => module.default,
);

const marked = new Marked({ gfm: true, breaks: false, async: false });

const purifier = DOMPurify(window);
const codePurifier = DOMPurify(window);

/** @type {import("../vendor/dompurify/purify.es.js").Config & {RETURN_DOM_FRAGMENT: true}} */
const PURIFY_CONFIG = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: [
    "style",
    "form",
    "input",
    "button",
    "textarea",
    "select",
    "option",
    "iframe",
    "frame",
    "object",
    "embed",
    "video",
    "audio",
    "source",
    "link",
    "meta",
    "base",
    "dialog",
  ],
  FORBID_ATTR: ["style", "id", "name", "srcset", "autofocus", "tabindex"],
  ALLOW_DATA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
};

/** @type {import("../vendor/dompurify/purify.es.js").Config & {RETURN_DOM_FRAGMENT: true}} */
const CODE_CONFIG = {
  ALLOWED_TAGS: ["span"],
  ALLOWED_ATTR: ["class"],
  RETURN_DOM_FRAGMENT: true,
};

// The only class kept from model output is the language of a fenced code block, which
// the highlighter needs; any other class could make model output look like app chrome.
purifier.addHook("uponSanitizeAttribute", (node, data) => {
  if (data.attrName === "class") {
    data.keepAttr = node.nodeName === "CODE" && /^language-[\w+#.-]+$/.test(data.attrValue);
  }
});

// Links open outside the app; images load only from data: URLs (the CSP also enforces
// this), so a remote "image" cannot be used to report that a message was read.
purifier.addHook("afterSanitizeAttributes", (node) => {
  if (node.nodeName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

function replaceRemoteImages(fragment) {
  for (const image of fragment.querySelectorAll("img")) {
    const source = image.getAttribute("src") || "";
    if (!source.startsWith("data:image/")) {
      const alt = image.getAttribute("alt") || "image";
      image.replaceWith(h("span", { class: "image-placeholder", text: `[${alt}]` }));
    }
  }
}

function highlightInto(hljs, code, language) {
  const text = code.textContent;
  let result = null;
  try {
    if (language && hljs.getLanguage(language)) {
      result = hljs.highlight(text, { language, ignoreIllegals: true });
    } else if (!language && text.length < 4000) {
      result = hljs.highlightAuto(text);
    }
  } catch {
    result = null;
  }
  if (result) {
    code.replaceChildren(codePurifier.sanitize(result.value, CODE_CONFIG));
    code.classList.add("hljs");
  }
}

// Highlighting is the costly part of rendering (about 7 ms per block against 1 ms for the
// Markdown itself), so by default a block is highlighted only when it comes near the
// screen: opening a page of eighty answers must not highlight eighty code blocks.
const waiting = new Set();
let observer = null;

function lazyObserver() {
  if (!observer) {
    observer = new IntersectionObserver(
      (entries) => {
        for (const entry of entries) {
          if (entry.isIntersecting) {
            observer.unobserve(entry.target);
            waiting.delete(entry.target);
            const code = /** @type {HTMLElement} */ (entry.target);
            highlighter.then((hljs) => highlightInto(hljs, code, code.dataset.language ?? ""));
          }
        }
        // Blocks of messages dropped from the page before they were seen.
        for (const code of waiting) {
          if (!code.isConnected) {
            observer.unobserve(code);
            waiting.delete(code);
          }
        }
      },
      { rootMargin: "600px 0px" },
    );
  }
  return observer;
}

function highlightLater(code, language) {
  code.dataset.language = language;
  waiting.add(code);
  lazyObserver().observe(code);
}

function frameCodeBlocks(fragment, highlight) {
  for (const pre of fragment.querySelectorAll("pre")) {
    const code = pre.querySelector("code");
    if (!code) {
      continue;
    }
    const languageClass = [...code.classList].find((name) => name.startsWith("language-"));
    const language = languageClass ? languageClass.slice("language-".length) : "";
    if (highlight) {
      highlightLater(code, language);
    }
    const copy = h(
      "button",
      {
        type: "button",
        class: "copy-button",
        "aria-label": "Copy code",
        on: {
          click: async (event) => {
            const button = event.currentTarget;
            if (await copyText(code.textContent)) {
              flashCopied(button);
            }
          },
        },
      },
      icon("copy", "small"),
      h("span", { class: "label", text: "Copy" }),
    );
    const frame = h(
      "div",
      { class: "code-frame" },
      h("div", { class: "code-head" }, h("span", { text: language || "text" }), copy),
    );
    pre.replaceWith(frame);
    frame.appendChild(pre);
  }
}

// Bounds on what is rendered as Markdown. The parser recurses per nesting level and its
// inline rules scan whole lines, so a hostile or broken answer (">" nested thousands deep,
// a megabyte on one line) could overflow the stack or freeze the page; such text is shown
// as plain text instead, which loses nothing but the formatting.
const MAX_MARKDOWN_CHARS = 200_000;
const MAX_LINE_CHARS = 20_000;
const MAX_NESTING = 24;

/** Why `text` is not rendered as Markdown, or "" when it is within the bounds. */
function outOfBounds(text) {
  if (text.length > MAX_MARKDOWN_CHARS) {
    return "too long to format";
  }
  for (const line of text.split("\n")) {
    if (line.length > MAX_LINE_CHARS) {
      return "a line too long to format";
    }
    // Block nesting: quote markers and list indentation at the start of the line.
    const lead = /^[\s>*+-]*/.exec(line)[0];
    const quotes = lead.split(">").length - 1;
    const indent = lead.replace(/[^ \t]/g, "").replace(/\t/g, "    ").length;
    if (quotes > MAX_NESTING || indent / 2 > MAX_NESTING) {
      return "nested too deeply to format";
    }
  }
  return "";
}

/** The text as it is, marked as not formatted (and why). */
export function plainText(text, reason) {
  const fragment = document.createDocumentFragment();
  fragment.append(
    h("p", { class: "plain-note", text: `Shown as plain text: ${reason}.` }),
    h("div", { class: "plain-text", text }),
  );
  return fragment;
}

// Parsing and sanitizing is most of a message's drawing time, and the same texts are drawn
// again and again: switching back to a conversation, another version of a message (the
// page around it is re-read), a page dropped and loaded again. So the sanitized fragment
// of each recent text is kept and cloned; code frames, copy buttons and highlighting are
// added to each copy. Four pages' worth: the pages just left and the one around a switched
// version, without doubling what the page itself holds (at most 400 messages).
const PARSED_KEPT = 200;
/** @type {Map<string, DocumentFragment>} */
const parsed = new Map();

/** A sanitized fragment of `source`, the caller's own; kept for next time if `keep`. */
function sanitized(source, keep) {
  const kept = parsed.get(source);
  if (kept) {
    // Most recently used last, so the oldest is dropped first.
    parsed.delete(source);
    parsed.set(source, kept);
    return /** @type {DocumentFragment} */ (kept.cloneNode(true));
  }
  // `async: false` above: the parse is synchronous and returns the HTML itself.
  const html = /** @type {string} */ (marked.parse(source));
  const fragment = purifier.sanitize(html, PURIFY_CONFIG);
  replaceRemoteImages(fragment);
  if (keep) {
    if (parsed.size >= PARSED_KEPT) {
      parsed.delete(parsed.keys().next().value);
    }
    parsed.set(source, /** @type {DocumentFragment} */ (fragment.cloneNode(true)));
  }
  return fragment;
}

/**
 * Render untrusted Markdown to a sanitized DocumentFragment. `highlight`: "lazy" (code is
 * highlighted when it nears the screen) or false (never); `keep`: false for a text that
 * will not be drawn again (an answer still streaming). Never throws: text out of bounds,
 * or that the renderer fails on, comes back as plain text.
 * @param {string} text
 * @param {{highlight?: "lazy"|false, keep?: boolean}} [options]
 * @returns {DocumentFragment}
 */
export function renderMarkdown(text, { highlight = "lazy", keep = true } = {}) {
  const source = String(text ?? "");
  const reason = outOfBounds(source);
  if (reason) {
    return plainText(source, reason);
  }
  try {
    const fragment = sanitized(source, keep);
    frameCodeBlocks(fragment, highlight);
    return fragment;
  } catch (error) {
    console.warn("Markdown rendering failed; showing plain text", error);
    return plainText(source, "the formatter failed on it");
  }
}

/** Replace `target`'s children by the rendered Markdown. */
export function renderMarkdownInto(target, text, options) {
  target.replaceChildren(renderMarkdown(text, options));
}
