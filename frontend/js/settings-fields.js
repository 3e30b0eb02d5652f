// The pieces every Settings section draws its inputs with.

import { h } from "./dom.js";

export function field(label, control, help) {
  return h(
    "label",
    { class: "field" },
    h("span", { class: "field-label", text: label }),
    control,
    help ? h("span", { class: "field-help", text: help }) : null,
  );
}

export function numberOrNull(text) {
  const trimmed = String(text ?? "").trim();
  if (trimmed === "") {
    return null;
  }
  const value = Number(trimmed);
  return Number.isFinite(value) ? value : Number.NaN;
}
