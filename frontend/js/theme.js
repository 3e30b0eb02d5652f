// Light, dark, or the system's: a choice of this browser (Settings → General), kept in
// localStorage and applied before anything is drawn. `data-theme` on <html> picks the
// colour variables in base.css; the code highlighting's two stylesheets follow it.

const KEY = "foldline.theme";
export const THEMES = [
  ["system", "Same as the system"],
  ["light", "Light"],
  ["dark", "Dark"],
];

export function currentTheme() {
  const stored = localStorage.getItem(KEY);
  return THEMES.some(([value]) => value === stored) ? stored : "system";
}

export function applyTheme(theme = currentTheme()) {
  const root = document.documentElement;
  if (theme === "system") {
    root.removeAttribute("data-theme");
  } else {
    root.dataset.theme = theme;
  }
  const light = /** @type {HTMLLinkElement|null} */ (
    document.getElementById("code-theme-light")
  );
  const dark = /** @type {HTMLLinkElement|null} */ (document.getElementById("code-theme-dark"));
  if (light && dark) {
    light.media = theme === "system" ? "(prefers-color-scheme: light)" : theme === "light" ? "all" : "not all";
    dark.media = theme === "system" ? "(prefers-color-scheme: dark)" : theme === "dark" ? "all" : "not all";
  }
}

export function setTheme(theme) {
  localStorage.setItem(KEY, theme);
  applyTheme(theme);
}
