// Shared bits: problem details shown inline, the copy-as-curl button, the API key dialog.

import { setApiKey } from "./api.js";
import { el } from "./util.js";

export function problemBox(error) {
  const problem = error.problem || { title: "Error", detail: String(error.message || error) };
  const box = el("div", { class: "problem", role: "alert" },
    el("strong", { text: `${problem.status ? problem.status + " " : ""}${problem.title || "Error"}` }),
    problem.detail ? el("p", { text: problem.detail }) : null);
  if (problem.errors?.length) {
    const list = el("ul");
    for (const e of problem.errors) list.append(el("li", {}, el("code", { text: e.field }), `: ${e.message}`));
    box.append(list);
  }
  return box;
}

// A button that copies the equivalent curl command; the command is also shown, selectable,
// for browsers without clipboard access.
export function copyButton(command) {
  const out = el("div", { class: "curl-popup", hidden: true });
  const button = el("button", { type: "button", class: "curl", title: "Copy the equivalent curl command",
    text: "copy as curl" });
  button.addEventListener("click", async () => {
    const text = command();
    const area = el("textarea", { class: "curl-text", readonly: true, rows: 3, "aria-label": "curl command" });
    area.value = text;
    out.replaceChildren(area, el("button", { type: "button", text: "close", onclick: () => { out.hidden = true; } }));
    out.hidden = false;
    area.select();
    let copied = false;
    try {
      await navigator.clipboard.writeText(text);
      copied = true;
    } catch {
      copied = document.execCommand && document.execCommand("copy");
    }
    button.textContent = copied ? "copied ✓" : "copy as curl";
    setTimeout(() => { button.textContent = "copy as curl"; }, 1500);
  });
  return el("span", { class: "curl-wrap" }, button, out);
}

let dialog = null;

// Ask for an API key (kept in this tab's sessionStorage only). Resolves when one was saved.
export function askForKey(message) {
  if (!dialog) {
    const input = el("input", { type: "password", id: "api-key-input", autocomplete: "off",
      placeholder: "adapt_…", "aria-describedby": "api-key-help" });
    const form = el("form", { method: "dialog" },
      el("h2", { text: "API key" }),
      el("p", { id: "api-key-help", text: "This server requires an API key. It is kept for this browser tab's session only (sessionStorage) and sent in the Authorization header." }),
      el("p", { class: "key-message problem", hidden: true }),
      el("label", { for: "api-key-input", text: "Key" }), input,
      el("div", { class: "actions" },
        el("button", { type: "submit", value: "save", class: "primary", text: "Use key" }),
        el("button", { type: "button", text: "Cancel", onclick: () => dialog.close("cancel") })));
    dialog = el("dialog", { id: "key-dialog", "aria-labelledby": "key-dialog-title" }, form);
    form.querySelector("h2").id = "key-dialog-title";
    document.body.append(dialog);
  }
  const note = dialog.querySelector(".key-message");
  note.hidden = !message;
  note.textContent = message || "";
  const input = dialog.querySelector("input");
  input.value = "";
  if (!dialog.open) dialog.showModal();
  input.focus();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      if (dialog.returnValue === "save" && input.value.trim()) {
        setApiKey(input.value.trim());
        resolve(true);
      } else resolve(false);
    }, { once: true });
  });
}
