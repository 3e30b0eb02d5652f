// One Tab stop for a list, arrow keys within it (a roving tabindex). A long conversation
// or sidebar is then one Tab stop instead of four or five per entry: ↑/↓ (and Home/End)
// move between the entries, → (or Enter on a message) steps into an entry's buttons,
// ←/→ move between those, Esc goes back to the entry. Text fields inside an entry (an
// editor, a rename box) keep their own keys and stay in the Tab order.

const EDITING = "textarea, input, select, [contenteditable=''], [contenteditable='true']";
const CONTROLS =
  "button, a[href], summary, select, [tabindex]:not([data-roving-item])";
// A region that scrolls (a long tool output) keeps its own Tab stop while it is shown:
// the arrow keys scroll it, so it cannot be reached by them.
const SCROLLERS = ".tool-output, pre[tabindex]";

/**
 * @param {HTMLElement} container
 * @param {{items: string, start?: "first" | "last", onEnter?: (item: HTMLElement) => boolean}} options
 *   `items`: the entries' selector; `start`: the entry that holds the Tab stop when none
 *   was focused yet; `onEnter(item)`: Enter on the entry itself (true: handled).
 */
export function rovingList(container, { items, start = "first", onEnter }) {
  let current = null;
  /** @type {() => HTMLElement[]} */
  const all = () =>
    [.../** @type {NodeListOf<HTMLElement>} */ (container.querySelectorAll(items))].filter(
      visible,
    );
  /** @type {(item: HTMLElement) => HTMLElement[]} */
  const controlsOf = (item) =>
    [.../** @type {NodeListOf<HTMLButtonElement>} */ (item.querySelectorAll(CONTROLS))].filter(
      (element) => visible(element) && !element.closest(EDITING) && !element.disabled,
    );

  const settle = () => {
    const list = all();
    if (!list.includes(current)) {
      current = start === "last" ? list.at(-1) ?? null : list[0] ?? null;
    }
    for (const item of list) {
      item.dataset.rovingItem = "";
      item.tabIndex = item === current ? 0 : -1;
      for (const control of /** @type {NodeListOf<HTMLElement>} */ (
        item.querySelectorAll(CONTROLS)
      )) {
        if (
          !control.closest(EDITING) &&
          !control.matches(EDITING) &&
          !control.matches(SCROLLERS) &&
          control !== item
        ) {
          control.tabIndex = -1;
        }
      }
    }
  };
  let pending = false;
  const schedule = () => {
    if (!pending) {
      pending = true;
      queueMicrotask(() => {
        pending = false;
        settle();
      });
    }
  };
  new MutationObserver(schedule).observe(container, { childList: true, subtree: true });
  settle();

  const focusItem = (item) => {
    if (!item) {
      return;
    }
    current = item;
    settle();
    item.focus();
  };

  container.addEventListener("focusin", (event) => {
    const item = /** @type {HTMLElement} */ (event.target).closest?.(items);
    if (item && container.contains(item) && item !== current) {
      current = item;
      settle();
    }
  });

  container.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) {
      return;
    }
    const target = /** @type {HTMLElement} */ (event.target);
    if (target.closest(EDITING)) {
      return;
    }
    const item = /** @type {HTMLElement|null} */ (target.closest(items));
    if (!item || !container.contains(item)) {
      return;
    }
    const list = all();
    const at = list.indexOf(item);
    const onItem = target === item;
    const controls = controlsOf(item);
    const step = (by) => {
      const index = controls.indexOf(target);
      controls[(index + by + controls.length) % controls.length]?.focus();
    };
    switch (event.key) {
      case "ArrowDown":
        event.preventDefault();
        focusItem(list[Math.min(at + 1, list.length - 1)]);
        break;
      case "ArrowUp":
        event.preventDefault();
        focusItem(list[Math.max(at - 1, 0)]);
        break;
      case "Home":
        if (onItem) {
          event.preventDefault();
          focusItem(list[0]);
        }
        break;
      case "End":
        if (onItem) {
          event.preventDefault();
          focusItem(list.at(-1));
        }
        break;
      case "ArrowRight":
        if (controls.length) {
          event.preventDefault();
          onItem ? controls[0].focus() : step(1);
        }
        break;
      case "ArrowLeft":
        if (!onItem) {
          event.preventDefault();
          controls.indexOf(target) === 0 ? item.focus() : step(-1);
        }
        break;
      case "Escape":
        if (!onItem) {
          event.preventDefault();
          event.stopPropagation();
          item.focus();
        }
        break;
      case "Enter":
        if (onItem && onEnter?.(item)) {
          event.preventDefault();
        } else if (onItem && controls.length) {
          event.preventDefault();
          controls[0].focus();
        }
        break;
      default:
        break;
    }
  });

  return {
    /** Focus the entry holding the Tab stop (a skip link's target). */
    focus: () => {
      settle();
      (current ?? all().at(start === "last" ? -1 : 0))?.focus();
    },
  };
}

function visible(element) {
  return element.getClientRects().length > 0;
}
