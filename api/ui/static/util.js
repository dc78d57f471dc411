// Small DOM and formatting helpers. Data is only ever set as text (never as HTML).

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "style") node.style.cssText = value; // CSSOM: allowed by the page's CSP
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value === true) node.setAttribute(key, "");
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// replaceChildren without the null/false entries (which it would turn into text)
export function put(node, ...children) {
  node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

// Numbers are written one way everywhere: whole numbers with a thousands separator
// ("12,345"), costs in dollars, durations in ms / s / min, rewards to three decimals.
const INT = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

export function fmtInt(n) {
  if (n === null || n === undefined) return "–";
  return INT.format(n);
}

// "1 call", "2 calls", "1,234 tokens"
export function plural(n, one, many = `${one}s`) {
  return `${fmtInt(n)} ${n === 1 ? one : many}`;
}

export function fmtCost(usd) {
  if (usd === null || usd === undefined) return "–";
  if (usd === 0) return "$0";
  if (usd < 0.01) return "$" + usd.toFixed(4);
  return "$" + usd.toFixed(2);
}

export function fmtSeconds(s) {
  if (s === null || s === undefined || Number.isNaN(s)) return "–";
  if (s < 1) return (s * 1000).toFixed(0) + " ms";
  if (s < 120) return s.toFixed(1) + " s";
  return (s / 60).toFixed(1) + " min";
}

export function fmtReward(r) {
  return r === null || r === undefined ? "–" : String(Math.round(r * 1000) / 1000);
}

export function fmtBool(b) {
  return b === true ? "yes" : b === false ? "no" : "–";
}

export function duration(task) {
  if (!task.started_at) return null;
  const end = task.finished_at ? Date.parse(task.finished_at) : Date.now();
  return (end - Date.parse(task.started_at)) / 1000;
}

export function tokens(usage) {
  return (usage?.prompt_tokens || 0) + (usage?.completion_tokens || 0);
}

export function statusBadge(status) {
  return el("span", { class: `status status-${status}`, text: status });
}

// Navigate inside the single-page app without a reload.
export function link(href, text, attrs = {}) {
  return el("a", { href, "data-nav": "", ...attrs }, text);
}

export function go(href, { replace = false } = {}) {
  if (replace) history.replaceState(null, "", href);
  else history.pushState(null, "", href);
  window.dispatchEvent(new Event("adapt:navigate"));
}
