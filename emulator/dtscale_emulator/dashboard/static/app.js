// The dashboard page: routes itself from the URL (so back/forward and shared links keep filters), renders each
// section from the server's JSON API, and re-renders when the server reports a change over server-sent events.
import { renderInstance } from "./instance.js";
import { stopStream } from "./stream.js";
import { renderEntities, renderEntity, renderSchedules, renderWorkers } from "./entities.js";
import { api, ask, el, hubPath, link, navigate, notice, pager, show, statusBadge, STATUSES, when } from "./ui.js";
const FILTERS = ["name", "status", "tag", "from", "to", "prefix"];
const main = document.getElementById("main");
let hubs = [];
let live = null;

// ------------------------------------------------------------------------------------------------ list page

function filtersFromUrl() {
  const query = new URLSearchParams(location.search);
  return Object.fromEntries(FILTERS.map((k) => [k, query.get(k) || ""]));
}

function filterForm(hub, current) {
  const input = (name, label, type = "text") => el("label", {}, label,
    el("input", { name, type, value: current[name] }));
  // Any number of statuses (none: every status); the URL carries them comma-separated.
  const chosen = new Set(current.status.split(",").filter(Boolean));
  const status = el("fieldset", { class: "statuses" }, el("legend", {}, "Status"),
    STATUSES.map((s) => el("label", {}, el("input", { type: "checkbox", name: "status", value: s,
      checked: chosen.has(s) }), s)));
  const form = el("form", { class: "filters", "aria-label": "Filters" },
    input("name", "Name"), status, input("tag", "Tag (key or key=value)"),
    input("from", "Created from", "datetime-local"), input("to", "Created to", "datetime-local"),
    input("prefix", "Instance ID prefix"), el("button", { type: "submit" }, "Apply filters"),
    el("button", { type: "button", onclick: () => navigate(`/hubs/${encodeURIComponent(hub)}/orchestrations`) },
      "Clear"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const query = new URLSearchParams();
    for (const key of FILTERS.filter((k) => k !== "status")) {
      const value = form.elements[key].value.trim();
      if (value) query.set(key, value);
    }
    const statuses = [...form.querySelectorAll('input[name="status"]:checked')].map((box) => box.value);
    if (statuses.length) query.set("status", statuses.join(","));
    navigate(`/hubs/${encodeURIComponent(hub)}/orchestrations?${query}`);
  });
  return form;
}

function newOrchestration(hub) {
  ask({
    title: "New orchestration", submitLabel: "Start",
    fields: [
      { name: "name", label: "Orchestrator name", required: true },
      { name: "input", label: "Input (JSON)", type: "textarea", placeholder: '{"key": "value"}' },
      { name: "instance_id", label: "Instance ID (optional)" },
      { name: "version", label: "Version (optional)" },
      { name: "tags", label: "Tags (key=value, comma-separated)" },
    ],
    submit: (values) => api(hubPath(hub, "orchestrations"), { body: values }),
  });
}

async function bulk(hub, action) {
  const query = location.search;
  const { count, capped } = await api(hubPath(hub, `bulk/${action}${query}`), { body: {} });
  const which = action === "purge" ? "finished" : "unfinished";
  ask({
    title: `${action === "purge" ? "Purge" : "Terminate"} all matching`,
    text: `${count} ${which} instance(s) match the current filters${capped ? " (the most one action takes)" : ""}.`
      + " This cannot be undone.",
    fields: action === "terminate" ? [{ name: "reason", label: "Reason" }] : [],
    submitLabel: `${action === "purge" ? "Purge" : "Terminate"} ${count}`,
    submit: (values) => api(hubPath(hub, `bulk/${action}${query}`), { body: { ...values, confirm: count } }),
  });
}

// A live refresh replaces only the results: the filter form keeps what is being typed in it, and its focus.
async function renderList(hub, refresh) {
  const current = filtersFromUrl();
  const data = await api(hubPath(hub, `orchestrations${location.search}`));
  const instanceUrl = (id) => `/hubs/${encodeURIComponent(hub)}/instances/${encodeURIComponent(id)}`;
  const rows = data.items.map((i) => el("tr", {},
    el("td", {}, link(instanceUrl(i.instance_id), i.instance_id)), el("td", {}, i.name), el("td", {}, i.version || ""),
    el("td", {}, statusBadge(i.status)),
    el("td", {}, Object.entries(i.tags).map(([k, v]) => el("span", { class: "tag" }, `${k}=${v}`))),
    el("td", {}, when(i.created_at)), el("td", {}, when(i.last_updated_at))));
  const canAct = !data.refused;
  const count = `${data.items.length} instance(s) on this page`
    + (data.stopped ? ` (looked through ${data.scanned} without filling it: Next page looks further)` : "");
  const results = [
    el("p", { class: "count" }, count),
    el("table", { class: "grid", "aria-label": "Orchestrations" },
      el("thead", {}, el("tr", {}, ["Instance ID", "Name", "Version", "Status", "Tags", "Created", "Last updated"]
        .map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: 7, class: "muted" }, "No instances")))),
    pager(data.next)];
  const shown = main.querySelector("#list-results");
  if (refresh && shown && shown.dataset.hub === hub && !data.refused) {
    show(shown, ...results);
    return data.digest;
  }
  show(main,
    el("h1", {}, "Orchestrations"),
    data.refused ? el("p", { class: "error", role: "alert" }, `The backend refused this task hub: ${data.refused}`) : null,
    el("div", { class: "toolbar" }, canAct ? [
      el("button", { class: "primary", onclick: () => newOrchestration(hub) }, "New orchestration"),
      el("button", { onclick: () => bulk(hub, "terminate").catch((e) => notice(e.message, true)) },
        "Terminate all matching"),
      el("button", { onclick: () => bulk(hub, "purge").catch((e) => notice(e.message, true)) }, "Purge all matching"),
    ] : []),
    filterForm(hub, current),
    el("div", { id: "list-results", "data-hub": hub }, results));
  return data.digest;
}

// ------------------------------------------------------------------------------------------------ routing

// `query` names the watched page (`view`) and its own parameters; `since` is the digest of what it shows.
function watch(hub, query) {
  if (live) { live.close(); live = null; }
  if (!document.getElementById("live").checked || !hub) return;
  live = new EventSource(hubPath(hub, `live?${query}`));
  live.addEventListener("change", () => render(false));
}

function parseRoute() {
  const parts = location.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] !== "hubs" || parts.length < 2) return { hub: null };
  return { hub: parts[1], section: parts[2] || "orchestrations", id: parts.slice(3).join("/") || null };
}

// Renders run one after another, each for the URL as it is when it starts: a slow render of the page left behind
// cannot finish after the page navigated to and show itself in its place.
let rendering = Promise.resolve();

function render(rewatch) {
  rendering = rendering.catch(() => {}).then(() => renderNow(rewatch));
  return rendering;
}

async function renderNow(rewatch) {
  const { hub, section, id } = parseRoute();
  if (!hub) {
    if (!hubs.length) return;
    history.replaceState(null, "", `/hubs/${encodeURIComponent(hubs[0].name)}/orchestrations`);
    return renderNow(rewatch);
  }
  const select = document.getElementById("hub-select");
  select.value = hub;
  for (const name of ["orchestrations", "entities", "schedules", "workers"]) {
    const a = document.getElementById(`nav-${name}`);
    a.href = `/hubs/${encodeURIComponent(hub)}/${name}`;
    a.onclick = (event) => { event.preventDefault(); navigate(a.getAttribute("href")); };
    a.toggleAttribute("aria-current", section === name || (section === "instances" && name === "orchestrations"));
  }
  // Every page has a live feed: `view` tells the server what to watch, with the page's own parameters.
  let view = "orchestrations";
  let query = new URLSearchParams(location.search);
  let digest = null;  // of what the page now shows
  if (section !== "instances" || !id) stopStream();
  try {
    if (section === "instances" && id) {
      [view, query] = ["instance", new URLSearchParams({ id })];
      digest = await renderInstance(main, hub, id);
    } else if (section === "entities" && id) {
      [view, query] = ["entity", new URLSearchParams({ id })];
      digest = await renderEntity(main, hub, id);
    } else if (section === "entities") {
      view = "entities";
      digest = await renderEntities(main, hub);
    } else if (section === "schedules") {
      view = "schedules";
      digest = await renderSchedules(main, hub);
    } else if (section === "workers") {
      view = "workers";
      digest = await renderWorkers(main, hub);
    } else {
      digest = await renderList(hub, !rewatch);
    }
  } catch (problem) {
    stopStream();
    show(main, el("p", { class: "error", role: "alert" }, problem.message));
  }
  if (rewatch) {
    query.set("view", view);
    if (digest) query.set("since", digest);
    watch(digest ? hub : null, query);
  }
}

function route() {
  return render(true);
}

async function boot() {
  try {
    hubs = (await api("/api/hubs")).hubs;
  } catch (problem) {
    show(main, el("p", { class: "error", role: "alert" }, problem.message));
    return;
  }
  const select = document.getElementById("hub-select");
  select.replaceChildren(...hubs.map((h) => el("option", { value: h.name }, h.name + (h.refused ? " (refused)" : ""))));
  select.addEventListener("change", () => navigate(`/hubs/${encodeURIComponent(select.value)}/orchestrations`));
  document.getElementById("live").addEventListener("change", () => route());
  window.addEventListener("popstate", () => route());
  window.addEventListener("dashboard:route", () => route());
  await route();
  document.body.dataset.ready = "true";
}

boot();
