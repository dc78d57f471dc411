// The router of the tree viewer: one page per URL, links navigate without a reload, and an
// API key is asked for when the server answers 401.

import { apiKey, setApiKey } from "./api.js";
import { comparePage } from "./compare.js";
import { newTaskPage } from "./newtask.js";
import { taskPage } from "./task.js";
import { tasksPage } from "./tasks.js";
import { el } from "./util.js";
import { askForKey } from "./widgets.js";

const main = document.getElementById("main");
const keyStatus = document.getElementById("key-status");
let controller = null;

function renderKeyStatus() {
  keyStatus.replaceChildren(apiKey()
    ? el("button", { type: "button", id: "forget-key", text: "Forget API key",
      onclick: () => { setApiKey(null); route(); } })
    : el("button", { type: "button", id: "enter-key", text: "API key…",
      onclick: async () => { if (await askForKey()) route(); } }));
}

async function route() {
  controller?.abort();
  controller = new AbortController();
  const { signal } = controller;
  const url = new URL(location.href);
  const path = url.pathname.replace(/\/+$/, "") || "/ui";
  const params = url.searchParams;
  delete main.dataset.loaded;
  delete main.dataset.lastSeq;
  delete main.dataset.startSeq;
  for (const a of document.querySelectorAll("header nav a")) {
    a.toggleAttribute("aria-current", a.getAttribute("href") === path);
  }
  main.replaceChildren(el("p", { class: "muted", text: "Loading…" }));
  const taskMatch = path.match(/^\/ui\/tasks\/([^/]+)$/);
  if (taskMatch) {
    document.title = `Task ${decodeURIComponent(taskMatch[1]).slice(0, 8)} · adapt`;
    await taskPage(main, decodeURIComponent(taskMatch[1]), params, signal);
  } else if (path === "/ui/new") {
    document.title = "New task · adapt";
    await newTaskPage(main, params, signal);
  } else if (path === "/ui/compare") {
    document.title = "Compare · adapt";
    await comparePage(main, params, signal);
  } else {
    document.title = "Tasks · adapt";
    await tasksPage(main, params, signal);
  }
}

document.addEventListener("click", (event) => {
  const a = event.target.closest("a[data-nav], header nav a:not(.external)");
  if (!a || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
  event.preventDefault();
  history.pushState(null, "", a.getAttribute("href"));
  route();
});
window.addEventListener("popstate", route);
window.addEventListener("adapt:navigate", route);
window.addEventListener("adapt:key", renderKeyStatus);

let asking = false;
window.addEventListener("adapt:unauthorized", async () => {
  if (asking) return;
  asking = true;
  const had = apiKey();
  if (had) setApiKey(null);
  const ok = await askForKey(had ? "The server refused that key (invalid or revoked)." : null);
  asking = false;
  if (ok) route();
});

renderKeyStatus();
route();
