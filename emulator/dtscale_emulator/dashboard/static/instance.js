// The instance page: overview, actions, running activities, a Gantt timeline of its work, its stream, and its
// history with payloads.
import { api, ask, el, hubPath, jsonBlock, link, navigate, show, statusBadge, when } from "./ui.js";
import { streamPanel } from "./stream.js";

const instanceUrl = (hub, id) => `/hubs/${encodeURIComponent(hub)}/instances/${encodeURIComponent(id)}`;

function act(hub, id, action, body) {
  return api(hubPath(hub, `instance/${action}?${new URLSearchParams({ id })}`), { body });
}

function actionButtons(hub, data) {
  const id = data.instance_id;
  const reason = [{ name: "reason", label: "Reason" }];
  const simple = (label, action, text) => el("button", {
    onclick: () => ask({ title: `${label} ${id}`, text, fields: reason, submitLabel: label,
      submit: (v) => act(hub, id, action, v) }),
  }, label);
  return el("div", { class: "toolbar", role: "group", "aria-label": "Actions" },
    el("button", {
      onclick: () => ask({ title: `Terminate ${id}`, submitLabel: "Terminate",
        fields: [...reason, { name: "recursive", label: "Also terminate sub-orchestrations", type: "checkbox",
          value: true }],
        submit: (v) => act(hub, id, "terminate", v) }),
    }, "Terminate"),
    simple("Suspend", "suspend"), simple("Resume", "resume"),
    el("button", {
      onclick: () => ask({ title: `Raise event on ${id}`, submitLabel: "Raise",
        fields: [{ name: "event_name", label: "Event name", required: true },
          { name: "data", label: "Event data (JSON)", type: "textarea", placeholder: "true" }],
        submit: (v) => act(hub, id, "raise", v) }),
    }, "Raise event"),
    el("button", {
      onclick: () => ask({ title: `Restart ${id}`, submitLabel: "Restart",
        text: "Starts the orchestration again with its original name, version and input.",
        fields: [{ name: "new_instance_id", label: "Under a new instance ID", type: "checkbox" }],
        submit: async (v) => {
          const result = await act(hub, id, "restart", v);
          if (result.instance_id !== id) navigate(instanceUrl(hub, result.instance_id));
          return result;
        } }),
    }, "Restart"),
    simple("Rewind", "rewind", "Runs the failed work again; what succeeded is kept."),
    el("button", {
      onclick: () => ask({ title: `Purge ${id}`, submitLabel: "Purge",
        text: "Deletes the instance and its history. This cannot be undone.",
        fields: [{ name: "recursive", label: "Also purge sub-orchestrations", type: "checkbox", value: true }],
        submit: async (v) => {
          const result = await act(hub, id, "purge", v);
          navigate(`/hubs/${encodeURIComponent(hub)}/orchestrations`);
          return result;
        } }),
    }, "Purge"));
}

function failureBody(failure) {
  return [el("p", {}, el("strong", {}, failure.error_type), ": ", failure.message),
    failure.stack_trace ? el("pre", { class: "stack" }, failure.stack_trace) : null,
    failure.inner ? el("div", { class: "inner" }, "Caused by:", failureBody(failure.inner)) : null];
}

function failureBlock(failure) {
  if (!failure) return null;
  return el("div", { class: "failure", role: "region", "aria-label": "Failure details" }, failureBody(failure));
}

function overview(hub, d) {
  const row = (label, ...value) => [el("dt", {}, label), el("dd", {}, ...value)];
  const fingerprint = Object.entries(d.fingerprint || {});
  return el("section", { "aria-labelledby": "overview-h" },
    el("h2", { id: "overview-h" }, "Overview"),
    d.pending_reason ? el("p", { class: "pending", role: "note" }, `Why is it pending? ${d.pending_reason}`) : null,
    el("dl", { class: "props" },
      row("Status", statusBadge(d.status)), row("Name", d.name), row("Version", d.version || "(none)"),
      row("Execution ID", d.execution_id || ""), row("Created", when(d.created_at)),
      row("Last updated", when(d.last_updated_at)),
      d.scheduled_start_at ? row("Scheduled start", when(d.scheduled_start_at)) : [],
      d.completed_at ? row("Completed", when(d.completed_at)) : [],
      row("Parent", d.parent_instance_id ? link(instanceUrl(hub, d.parent_instance_id), d.parent_instance_id) : "(none)"),
      row("Children", d.children.length ? el("ul", {}, d.children.map((c) =>
        el("li", {}, link(instanceUrl(hub, c.instance_id), c.instance_id), ` (${c.name})`))) : "(none)"),
      row("Tags", Object.entries(d.tags).map(([k, v]) => el("span", { class: "tag" }, `${k}=${v}`))),
      fingerprint.length ? row("Attach fingerprint", el("ul", {}, fingerprint.map(([k, v]) =>
        el("li", {}, el("code", {}, k.replace("durabletask.fingerprint.", "")), ": ", el("code", {}, v))))) : []),
    failureBlock(d.failure),
    payload("Input", d.input), payload("Output", d.output), payload("Custom status", d.custom_status));
}

function payload(title, text) {
  const id = `payload-${title.toLowerCase().replace(" ", "-")}`;
  return el("div", { role: "region", "aria-labelledby": id }, el("h3", { id }, title), jsonBlock(text));
}

function timeline(d) {
  const bars = d.timeline;
  const section = el("section", { "aria-labelledby": "timeline-h" }, el("h2", { id: "timeline-h" }, "Timeline"));
  if (!bars.length) return section;
  const t0 = Date.parse(bars[0].start);
  const ends = bars.map((b) => Date.parse(b.end || b.start));
  const span = Math.max(1, Math.max(...ends) - t0);
  const seconds = (ms) => `${(ms / 1000).toFixed(ms < 10000 ? 3 : 1)} s`;
  const rows = bars.map((b) => {
    const start = Date.parse(b.start) - t0;
    // A timer's firing is stamped with its due time, which may precede the moment it was recorded as created.
    const end = Math.max(start, Date.parse(b.end || new Date().toISOString()) - t0);
    const label = `${b.kind === "orchestration" ? "" : `#${b.sequence_id} `}${b.name}`
      + (b.attempt > 1 ? ` (retry ${b.attempt - 1})` : "");
    const title = `${b.kind} ${label}: ${b.outcome}, ${seconds(end - start)}`;
    return el("div", { class: "gantt-row", role: "row" },
      el("div", { class: "gantt-label", role: "rowheader" }, el("span", { class: `kind kind-${b.kind}` }, b.kind), label),
      el("div", { class: "gantt-track", role: "cell" },
        el("div", { class: `gantt-bar outcome-${b.outcome}`, title, "aria-label": title,
          style: { left: `${(100 * start) / span}%`, width: `${Math.max(0.5, (100 * (end - start)) / span)}%` } })),
      el("div", { class: "gantt-time", role: "cell" }, `${b.outcome} · ${seconds(end - start)}`));
  });
  section.append(el("div", { class: "gantt", role: "table", "aria-label": "Timeline" }, rows),
    el("p", { class: "muted" }, `Total ${seconds(span)}`));
  return section;
}

// Bounded activity calls still running: each attempt's timeouts and its last heartbeat (time and details).
function runningActivities(d) {
  if (!d.activities || !d.activities.length) return null;
  const timeouts = (t) => Object.entries(t).map(([kind, seconds]) => `${kind} ${seconds} s`).join(", ") || "(none)";
  const rows = d.activities.map((a) => el("tr", {},
    el("td", {}, `#${a.task_id} ${a.name}`), el("td", {}, String(a.attempt)), el("td", {}, timeouts(a.timeouts)),
    el("td", {}, a.started_at ? when(a.started_at) : "not yet"),
    el("td", {}, a.last_heartbeat_at ? when(a.last_heartbeat_at) : "none yet"),
    el("td", {}, a.last_heartbeat_details === null ? "" : jsonBlock(a.last_heartbeat_details))));
  return el("section", { "aria-labelledby": "activities-h" }, el("h2", { id: "activities-h" }, "Running activities"),
    el("table", { class: "grid", "aria-label": "Running activities" },
      el("thead", {}, el("tr", {}, ["Activity", "Attempt", "Timeouts", "Started", "Last heartbeat",
        "Heartbeat details"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows)));
}

function historyTable(d) {
  const rows = d.history.map((e) => el("tr", {},
    el("td", {}, String(e.event_id)), el("td", {}, e.kind), el("td", {}, e.name || ""),
    el("td", {}, e.completes === null ? "" : `#${e.completes}`), el("td", {}, when(e.timestamp)),
    el("td", {}, Object.keys(e.fields).filter((k) => k !== "name").length
      ? el("details", {}, el("summary", {}, "payload"),
        el("pre", { class: "payload" }, JSON.stringify(e.fields, null, 2))) : "")));
  return el("section", { "aria-labelledby": "history-h" }, el("h2", { id: "history-h" }, "History"),
    el("table", { class: "grid", "aria-label": "History" },
      el("thead", {}, el("tr", {}, ["Event ID", "Event", "Name", "Completes", "Timestamp", "Details"]
        .map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows)));
}

export async function renderInstance(main, hub, id) {
  const d = await api(hubPath(hub, `instance?${new URLSearchParams({ id })}`));
  show(main, 
    el("p", {}, link(`/hubs/${encodeURIComponent(hub)}/orchestrations`, "← Orchestrations")),
    el("h1", {}, d.instance_id, " ", statusBadge(d.status)),
    d.refused ? el("p", { class: "error", role: "alert" }, `The backend refused this task hub: ${d.refused}`)
      : actionButtons(hub, d),
    overview(hub, d), runningActivities(d), timeline(d),
    streamPanel(hub, id, document.getElementById("live").checked), historyTable(d));
  return d.digest;
}
