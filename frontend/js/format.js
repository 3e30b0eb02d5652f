// Numbers and times as people read them.

/** 1234 -> "1.2k", 180000 -> "180k", 1500000 -> "1.5M". */
export function formatTokens(value) {
  if (value === null || value === undefined || Number.isNaN(value)) {
    return "—";
  }
  const n = Math.round(value);
  if (Math.abs(n) < 1000) {
    return String(n);
  }
  if (Math.abs(n) < 1_000_000) {
    const k = n / 1000;
    return `${k >= 100 ? Math.round(k) : k.toFixed(1).replace(/\.0$/, "")}k`;
  }
  return `${(n / 1_000_000).toFixed(2).replace(/\.?0+$/, "")}M`;
}

// Formatters are made once: `toLocaleString` with a locale builds a new one on every
// call, and a page of messages formats hundreds of numbers and times.
const INTEGER = new Intl.NumberFormat("en-US");
const TIME = new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit" });
const WEEKDAY = new Intl.DateTimeFormat([], { weekday: "short" });
const DAY = new Intl.DateTimeFormat([], { day: "numeric", month: "short" });

export function formatInteger(value) {
  return INTEGER.format(Number(value ?? 0));
}

export function formatPercent(fraction) {
  if (fraction === null || fraction === undefined || Number.isNaN(fraction)) {
    return "—";
  }
  const percent = fraction * 100;
  return `${percent < 10 && percent > 0 ? percent.toFixed(1) : Math.round(percent)}%`;
}

export function plural(count, one, many = `${one}s`) {
  return `${formatInteger(count)} ${count === 1 ? one : many}`;
}

/** A short, human time: "14:05" today, "Mon" this week, else "12 Mar". */
export function formatWhen(iso) {
  if (!iso) {
    return "";
  }
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) {
    return "";
  }
  const now = new Date();
  const sameDay = date.toDateString() === now.toDateString();
  if (sameDay) {
    return TIME.format(date);
  }
  const days = (now.getTime() - date.getTime()) / 86_400_000;
  if (days < 6) {
    return WEEKDAY.format(date);
  }
  return DAY.format(date);
}

/** Which sidebar group a conversation's last activity falls in. */
export function dayGroup(iso) {
  if (!iso) {
    return "Older";
  }
  const date = new Date(iso);
  const now = new Date();
  const startOfToday = new Date(now.getFullYear(), now.getMonth(), now.getDate());
  const diff = (startOfToday.getTime() - date.getTime()) / 86_400_000;
  if (date >= startOfToday) {
    return "Today";
  }
  if (diff <= 1) {
    return "Yesterday";
  }
  if (diff <= 7) {
    return "Previous 7 days";
  }
  if (diff <= 30) {
    return "Previous 30 days";
  }
  return "Older";
}
