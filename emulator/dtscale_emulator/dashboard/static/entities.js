// Entities (list, one entity with its Signal action), schedules with their actions, and connected workers with
// their backlog. Each renderer returns the digest of what it shows, for the page's live feed.
import { api, ask, el, hubPath, jsonBlock, link, navigate, notice, pager, refresh, show, when } from "./ui.js";

const entityUrl = (hub, id) => `/hubs/${encodeURIComponent(hub)}/entities/${encodeURIComponent(id)}`;

function signal(hub, id) {
  ask({
    title: `Signal ${id}`, submitLabel: "Signal",
    fields: [{ name: "operation", label: "Operation", required: true },
      { name: "input", label: "Input (JSON)", type: "textarea" }],
    submit: (v) => api(hubPath(hub, `entity/signal?${new URLSearchParams({ id })}`), { body: v }),
  });
}

export async function renderEntities(main, hub) {
  const prefix = new URLSearchParams(location.search).get("prefix") || "";
  const data = await api(hubPath(hub, `entities${location.search}`));
  const form = el("form", { class: "filters", "aria-label": "Filters" },
    el("label", {}, "Entity ID prefix", el("input", { name: "prefix", value: prefix, placeholder: "@counter@" })),
    el("button", { type: "submit" }, "Apply filters"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const value = form.elements.prefix.value.trim();
    navigate(`/hubs/${encodeURIComponent(hub)}/entities${value ? `?${new URLSearchParams({ prefix: value })}` : ""}`);
  });
  const rows = data.items.map((e) => el("tr", {},
    el("td", {}, link(entityUrl(hub, e.id), e.id)), el("td", {}, e.name), el("td", {}, e.key),
    el("td", {}, when(e.last_modified)), el("td", {}, e.locked_by || ""), el("td", {}, String(e.backlog_queue_size))));
  show(main, el("h1", {}, "Entities"),
    data.refused ? el("p", { class: "error", role: "alert" }, `The backend refused this task hub: ${data.refused}`) : null,
    form,
    el("table", { class: "grid", "aria-label": "Entities" },
      el("thead", {}, el("tr", {}, ["Entity ID", "Name", "Key", "Last modified", "Locked by", "Queued operations"]
        .map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No entities")))),
    pager(data.next));
  return data.digest;
}

export async function renderEntity(main, hub, id) {
  const e = await api(hubPath(hub, `entity?${new URLSearchParams({ id })}`));
  if (e.refused) {
    show(main, el("p", { class: "error", role: "alert" }, `The backend refused this task hub: ${e.refused}`));
    return null;
  }
  const row = (label, ...value) => [el("dt", {}, label), el("dd", {}, ...value)];
  show(main, 
    el("p", {}, link(`/hubs/${encodeURIComponent(hub)}/entities`, "← Entities")),
    el("h1", {}, e.id),
    e.refused ? null : el("div", { class: "toolbar" }, el("button", { onclick: () => signal(hub, id) }, "Signal")),
    el("dl", { class: "props" }, row("Name", e.name), row("Key", e.key), row("Last modified", when(e.last_modified)),
      row("Locked by", e.locked_by || "(unlocked)"), row("Queued operations", String(e.backlog_queue_size))),
    el("h2", {}, "State"), jsonBlock(e.state));
  return e.digest;
}

// Pause, resume and delete run the schedule's operation orchestration: the button waits for its outcome.
async function scheduleAction(hub, id, action, button) {
  button.disabled = true;
  try {
    const result = await api(hubPath(hub, `schedule/${action}?${new URLSearchParams({ id })}`), { body: {} });
    notice(result.message);
    refresh();
  } catch (problem) {
    notice(problem.message, true);
    button.disabled = false;
  }
}

export async function renderSchedules(main, hub) {
  const data = await api(hubPath(hub, "schedules"));
  const label = { pause: "Pause", resume: "Resume", delete: "Delete" };
  const rows = data.items.map((s) => el("tr", {},
    el("td", {}, link(entityUrl(hub, `@schedule@${s.id}`), s.id)), el("td", {}, s.orchestration || ""),
    el("td", {}, s.status), el("td", {}, s.every), el("td", {}, when(s.next_run_at)), el("td", {}, when(s.last_run_at)),
    el("td", {}, when(s.start_at)), el("td", {}, when(s.end_at)),
    el("td", {}, data.refused ? [] : s.actions.map((a) => el("button", {
      "aria-label": `${label[a]} ${s.id}`,
      onclick: (event) => scheduleAction(hub, s.id, a, event.currentTarget),
    }, label[a])))));
  show(main, el("h1", {}, "Schedules"),
    data.refused ? el("p", { class: "error", role: "alert" }, `The backend refused this task hub: ${data.refused}`) : null,
    el("table", { class: "grid", "aria-label": "Schedules" },
      el("thead", {}, el("tr", {}, ["Schedule ID", "Orchestration", "Status", "Runs", "Next run", "Last run",
        "Start", "End", "Actions"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: 9, class: "muted" },
        "No schedules (they are made with durabletask.scheduled)")))));
  return data.digest;
}

function filterText(entries) {
  if (entries === null || entries === undefined) return "all";
  if (!entries.length) return "none";
  return entries.map((f) => f.name + (f.versions && f.versions.length ? ` (${f.versions.join(", ")})` : "")).join(", ");
}

export async function renderWorkers(main, hub) {
  const data = await api(hubPath(hub, "workers"));
  if (data.refused) {
    show(main, el("h1", {}, "Workers"),
      el("p", { class: "error", role: "alert" }, `The backend refused this task hub: ${data.refused}`));
    return null;
  }
  if (!data.available) {
    show(main, el("h1", {}, "Workers"),
      el("p", {}, "Not available: this backend does not tell which workers are connected (it lacks the worker "
        + "view, an extension of the protocol that our emulator serves)."));
    return data.digest;
  }
  const workers = data.workers.map((w) => el("tr", {},
    el("td", {}, String(w.id)), el("td", {}, filterText(w.orchestrations)), el("td", {}, filterText(w.activities)),
    el("td", {}, filterText(w.entities)), el("td", {}, w.capabilities.join(", ")), el("td", {}, String(w.in_flight))));
  // takers: how many connected workers' filters let the entry through; with workers connected and none of them
  // taking it, nobody will ever be sent it.
  const unserved = (b) => b.takers === 0 && data.workers.length > 0;
  const takers = (b) => unserved(b) ? "0: no connected worker takes it" : b.takers === undefined ? "" : String(b.takers);
  const backlog = data.backlog.map((b) => el("tr", {},
    el("td", {}, b.kind), el("td", {}, b.name), el("td", {}, b.version || ""),
    el("td", unserved(b) ? { class: "error" } : {}, takers(b)), el("td", {}, String(b.count))));
  show(main, el("h1", {}, "Workers"),
    el("table", { class: "grid", "aria-label": "Connected workers" },
      el("thead", {}, el("tr", {}, ["Stream", "Orchestrations", "Activities", "Entities", "Capabilities", "In flight"]
        .map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, workers.length ? workers : el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No worker connected")))),
    el("h2", {}, "Pending backlog"),
    el("table", { class: "grid", "aria-label": "Pending backlog" },
      el("thead", {}, el("tr", {}, ["Kind", "Name", "Version", "Workers that take it", "Pending"]
        .map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, backlog.length ? backlog : el("tr", {}, el("td", { colspan: 5, class: "muted" }, "Nothing pending")))));
  return data.digest;
}
