// The sidebar as a drawer on narrow windows (below 720 px): opened by the button at the
// top left, closed by Esc, a tap outside, or opening a conversation.

import { byId } from "./dom.js";

export function setDrawer(open) {
  byId("app").classList.toggle("sidebar-open", open);
  byId("drawer-backdrop").hidden = !open;
  byId("sidebar-button").setAttribute("aria-expanded", String(open));
  if (open) {
    byId("search").focus();
  }
}

export function isDrawerOpen() {
  return byId("app").classList.contains("sidebar-open");
}

export function initDrawer() {
  byId("sidebar-button").addEventListener("click", () => setDrawer(!isDrawerOpen()));
  byId("drawer-backdrop").addEventListener("click", () => setDrawer(false));
}
