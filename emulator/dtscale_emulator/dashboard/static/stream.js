// The instance page's stream: the items the instance published, the newest appended live while the page is open.
// It asks the server for pages after its cursor (never the whole stream) and keeps at most KEEP rows; the panel
// survives the instance page's own re-renders, so a live update of the page does not start the stream over.
import { api, el, hubPath } from "./ui.js";

const KEEP = 500;   // rows the page keeps; older ones leave the page (the stream itself keeps them)
const PAGE = 200;   // items asked per request (the server allows at most 500)
const FIRST = 100;  // the newest items shown when the page opens
const RETRY_MS = 1000;  // after a page that could not read a sealed segment yet, or a failed request

let panel = null;

const stamp = (iso) => new Date(iso).toISOString().replace("T", " ").slice(0, 23) + "Z";

function row(item) {
  const producer = item.task_id === null || item.task_id === undefined
    ? "orchestrator" : `task #${item.task_id}, attempt ${item.attempt}`;
  const data = item.truncated
    ? `${item.data} … (${item.data_length} characters; durabletask follow shows it whole)` : item.data;
  return el("tr", { "data-id": item.id, class: item.topic === "$dropped" ? "dropped" : null },
    el("td", { class: "nowrap" }, stamp(item.time)), el("td", {}, el("code", {}, item.topic)),
    el("td", { class: "nowrap" }, producer), el("td", {}, el("pre", { class: "item-data" }, data)));
}

class StreamPanel {
  constructor(hub, id) {
    Object.assign(this, { hub, id, cursor: null, digest: null, source: null, live: false, loading: false,
      again: false, stopped: false, skipped: 0, dropped: 0, removed: 0 });
    this.body = el("tbody", {});
    this.summary = el("p", { class: "muted stream-summary" }, "Reading the stream…");
    this.node = el("section", { "aria-labelledby": "stream-h" }, el("h2", { id: "stream-h" }, "Stream"),
      this.summary,
      el("table", { class: "grid stream", "aria-label": "Stream items" },
        el("thead", {}, el("tr", {}, ["Time", "Topic", "Published by", "Data"]
          .map((h) => el("th", { scope: "col" }, h)))),
        this.body));
    this.load();
  }

  query() {
    const query = new URLSearchParams({ id: this.id });
    if (this.cursor) { query.set("after", this.cursor); query.set("limit", String(PAGE)); }
    else query.set("tail", String(FIRST));
    return query;
  }

  // One reader at a time; a change heard while reading makes it read once more when done.
  async load() {
    if (this.loading) { this.again = true; return; }
    this.loading = true;
    try {
      for (;;) {
        const page = await api(hubPath(this.hub, `stream?${this.query()}`));
        if (this.stopped) return;
        this.take(page);
        if (!page.more) break;
        if (!page.items.length) { setTimeout(() => this.load(), RETRY_MS); break; }
      }
    } catch (problem) {
      if (!this.stopped) this.summary.textContent = `The stream could not be read: ${problem.message}`;
    } finally {
      this.loading = false;
      if (this.again && !this.stopped) { this.again = false; this.load(); }
    }
  }

  take(page) {
    if (!this.cursor) this.skipped = page.skipped;
    this.dropped = page.dropped;
    this.digest = page.digest;
    this.connect();
    this.cursor = page.next || this.cursor;
    this.body.append(...page.items.map(row));
    while (this.body.rows.length > KEEP) { this.body.rows[0].remove(); this.removed += 1; }
    const shown = this.body.rows.length;
    const parts = [shown ? `${shown} item(s) shown, newest last` : "No items published yet"];
    if (this.skipped + this.removed) parts.push(`${this.skipped + this.removed} earlier item(s) not shown here`);
    if (this.dropped) parts.push(`${this.dropped} oldest item(s) dropped by the retention cap`);
    this.summary.textContent = parts.join("; ") + (this.skipped + this.removed ? " (durabletask follow ID shows "
      + "every item)." : ".");
  }

  // Live: the server's feed for this stream says when items were stored; the panel then reads after its cursor.
  // The feed opens once the first page is read: `since` (that page's digest) makes the server report an item
  // stored between that read and the feed's first look.
  setLive(on) {
    this.live = on;
    this.connect();
  }

  connect() {
    if (!this.live || this.stopped) {
      if (this.source) { this.source.close(); this.source = null; }
      return;
    }
    if (this.source || this.digest === null) return;
    const query = new URLSearchParams({ view: "stream", id: this.id, since: this.digest });
    this.source = new EventSource(hubPath(this.hub, `live?${query}`));
    this.source.addEventListener("change", () => this.load());
  }

  stop() {
    this.stopped = true;
    this.connect();
  }
}

// The stream section of instance `id`: the same panel while the page shows that instance.
export function streamPanel(hub, id, live) {
  if (!panel || panel.hub !== hub || panel.id !== id) {
    stopStream();
    panel = new StreamPanel(hub, id);
  }
  panel.setLive(live);
  return panel.node;
}

export function stopStream() {
  if (panel) { panel.stop(); panel = null; }
}
