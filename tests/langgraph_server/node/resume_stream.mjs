// What a browser's useStream does with @langchain/langgraph-sdk, from Node: stream a run with streamResumable,
// lose the connection part-way, then join the run's stream again with the last event ID it saw.
//
// Usage: node resume_stream.mjs <sdk folder> <server URL> <assistant> <events before the drop>
// Prints one JSON object: the SDK's version, an uninterrupted stream of one run, the events of a second run before
// the drop and after the join, and that run's whole stream joined again from the start (Last-Event-ID -1).
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [sdkDir, apiUrl, assistantId, dropAfterText] = process.argv.slice(2);
const dropAfter = Number(dropAfterText);
const { Client } = await import(pathToFileURL(join(sdkDir, "dist", "index.js")).href);
const version = JSON.parse(await readFile(join(sdkDir, "package.json"), "utf8")).version;
const client = new Client({ apiUrl });
const input = { topic: "resumable streams" };
const streamMode = ["values", "updates", "custom"];

const part = (p) => ({ id: p.id ?? null, event: p.event, data: p.data });

async function uninterrupted() {
  const thread = await client.threads.create();
  const events = [];
  let runId = null;
  for await (const p of client.runs.stream(thread.thread_id, assistantId, {
    input, streamMode, streamResumable: true, onRunCreated: (meta) => { runId = meta.run_id; },
  })) events.push(part(p));
  return { threadId: thread.thread_id, runId, events };
}

async function droppedThenJoined() {
  const thread = await client.threads.create();
  const before = [];
  let runId = null;
  // useStream keeps the run ID it is told at creation (sessionStorage), to join the run after a reload.
  for await (const p of client.runs.stream(thread.thread_id, assistantId, {
    input, streamMode, streamResumable: true, onDisconnect: "continue",
    onRunCreated: (meta) => { runId = meta.run_id; },
  })) {
    before.push(part(p));
    if (before.length >= dropAfter) break; // leaving the loop aborts the request: the connection drops
  }
  const lastEventId = [...before].reverse().find((e) => e.id !== null)?.id ?? "-1";
  const after = [];
  for await (const p of client.runs.joinStream(thread.thread_id, runId, { lastEventId })) after.push(part(p));
  const replay = [];
  for await (const p of client.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1" })) replay.push(part(p));
  const run = await client.runs.get(thread.thread_id, runId);
  return { threadId: thread.thread_id, runId, lastEventId, before, after, replay, status: run.status };
}

const reference = await uninterrupted();
const resumed = await droppedThenJoined();
process.stdout.write(JSON.stringify({ version, reference, resumed }) + "\n");
