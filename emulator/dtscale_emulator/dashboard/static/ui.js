// Shared page helpers: element building, formatting, the JSON API, notices, navigation and the action dialog.
export const STATUSES = ["RUNNING", "COMPLETED", "CONTINUED_AS_NEW", "FAILED", "CANCELED", "TERMINATED",
  "PENDING", "SUSPENDED"];

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    // Through the CSSOM: the Content-Security-Policy (style-src 'self') refuses style attributes in markup.
    else if (key === "style") Object.assign(node.style, value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// Replaces a container's content; absent parts (null, undefined, false) are left out.
export function show(container, ...children) {
  container.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

export function when(iso) {
  if (!iso) return "";
  return new Date(iso).toISOString().replace("T", " ").slice(0, 19) + "Z";
}

export function statusBadge(status) {
  return el("span", { class: `status status-${status.toLowerCase()}` }, status);
}

export async function api(path, options = {}) {
  const init = { headers: { Accept: "application/json" }, ...options };
  if (options.body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(options.body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

export function hubPath(hub, rest) {
  return `/api/hubs/${encodeURIComponent(hub)}/${rest}`;
}

export function notice(text, isError = false) {
  const box = document.getElementById("notice");
  box.textContent = text;
  box.className = isError ? "error" : "ok";
}

// The router in app.js listens: any module can move to a page or re-render the current one.
export function navigate(url) {
  history.pushState(null, "", url);
  window.dispatchEvent(new Event("dashboard:route"));
}

export function refresh() {
  window.dispatchEvent(new Event("dashboard:route"));
}

// Paging follows the backend's continuation tokens: the URL keeps the trail of pages walked (repeated `after`),
// so a page of a huge hub costs one page of rows, and back/forward and shared links land on the same page.
export function pager(next) {
  const query = new URLSearchParams(location.search);
  const trail = query.getAll("after");
  const goTo = (after) => {
    query.delete("after");
    for (const token of after) query.append("after", token);
    navigate(`${location.pathname}?${query}`);
  };
  return el("nav", { class: "pager", "aria-label": "Pages" },
    el("button", { disabled: !trail.length, onclick: () => goTo(trail.slice(0, -1)) }, "Previous page"),
    el("span", {}, `Page ${trail.length + 1}${next ? "" : " (last)"}`),
    el("button", { disabled: !next, onclick: () => goTo([...trail, next]) }, "Next page"));
}

export function link(url, text) {
  return el("a", { href: url, onclick: (event) => { event.preventDefault(); navigate(url); } }, text);
}

// A payload kept in a payload store: the service holds only its token, `blob:v1:<container>:<blob name>`.
const PAYLOAD_TOKEN = /^blob:v\d+:/;

export function jsonBlock(text) {
  if (text === null || text === undefined || text === "") return el("span", { class: "muted" }, "(none)");
  if (PAYLOAD_TOKEN.test(text)) {
    return el("div", {}, el("pre", { class: "payload" }, text),
      el("p", { class: "muted", role: "note" }, "Externalized payload: the payload store holds it, the service only "
        + "this token (so its size is not known here). Show it with: durabletask get ID --payloads "
        + "(--payload-dir DIR | --blob-connection-string CS)"));
  }
  let shown = text;
  try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch { /* not JSON: show as stored */ }
  return el("pre", { class: "payload" }, shown);
}

// ------------------------------------------------------------------------------------------------ dialogs

// Asks for what an action needs; `submit` gets the values and may throw: its message stays in the dialog.
export function ask({ title, text = "", fields = [], submitLabel = "OK", submit }) {
  const dialog = document.getElementById("dialog");
  document.getElementById("dialog-title").textContent = title;
  document.getElementById("dialog-text").textContent = text;
  const error = document.getElementById("dialog-error");
  error.textContent = "";
  const box = document.getElementById("dialog-fields");
  box.replaceChildren(...fields.map((f) => {
    const id = `field-${f.name}`;
    const input = f.type === "textarea"
      ? el("textarea", { id, name: f.name, rows: 4, placeholder: f.placeholder || "" }, f.value || "")
      : el("input", { id, name: f.name, type: f.type || "text", placeholder: f.placeholder || "",
        value: f.type === "checkbox" ? null : (f.value || ""), checked: f.type === "checkbox" && f.value,
        required: f.required });
    return el("div", { class: "field" }, el("label", { for: id }, f.label), input);
  }));
  const submitButton = document.getElementById("dialog-submit");
  submitButton.textContent = submitLabel;
  const form = document.getElementById("dialog-form");
  form.onsubmit = async (event) => {
    event.preventDefault();
    const values = {};
    for (const f of fields) {
      const input = form.elements[f.name];
      values[f.name] = f.type === "checkbox" ? input.checked : input.value;
    }
    submitButton.disabled = true;
    try {
      const result = await submit(values);
      dialog.close();
      if (result && result.message) notice(result.message);
      refresh();
    } catch (problem) {
      error.textContent = problem.message;
    } finally {
      submitButton.disabled = false;
    }
  };
  document.getElementById("dialog-cancel").onclick = () => dialog.close();
  dialog.showModal();
}
