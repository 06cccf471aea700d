// Warrant's console: follows a run's events live (Server-Sent Events) and keeps the runs
// list fresh. No inline script, no HTML built from strings: text goes in as text.
"use strict";

const TERMINAL = new Set(["attained", "not_attained", "failed", "cancelled", "exhausted"]);

function setStatus(el, status) {
  el.textContent = status;
  el.className = "status s-" + status;
}

// The status a run has after an event, as far as the event says.
function statusAfter(type, data) {
  if (type === "run_finished" && data.outcome) {
    return String(data.outcome);
  }
  if (type === "approval_requested") return "waiting";
  if (type === "approval_resolved" || type === "call_reconciled") return "ready";
  return "running";
}

function line(seq, type, data) {
  const li = document.createElement("li");
  li.dataset.seq = String(seq);
  const s = document.createElement("span");
  s.className = "seq";
  s.textContent = String(seq);
  const b = document.createElement("b");
  b.textContent = type;
  li.append(s, " ", b);
  const bits = [];
  for (const k of ["step", "tool", "call", "status", "verdict", "outcome", "request", "reason"]) {
    if (data[k] === undefined) continue;
    let v = data[k];
    if (v && typeof v === "object") v = v.outcome || v.kind || JSON.stringify(v);
    bits.push(k + "=" + String(v).slice(0, 120));
  }
  if (bits.length) li.append(" " + bits.join(" "));
  return li;
}

function followRun() {
  const timeline = document.getElementById("timeline");
  const status = document.getElementById("status");
  if (!timeline || !status || TERMINAL.has(status.textContent)) return;
  const run = timeline.dataset.run;
  const source = new EventSource(
    "/v1/runs/" + encodeURIComponent(run) + "/events?from=" + timeline.dataset.from);
  const seen = new Set(Array.from(timeline.children, (li) => li.dataset.seq));
  source.onmessage = (ev) => {
    if (seen.has(ev.lastEventId)) return;
    seen.add(ev.lastEventId);
    let data = {};
    try { data = JSON.parse(ev.data); } catch (_) { return; }
    timeline.append(line(ev.lastEventId, data.type, data));
    const next = statusAfter(data.type, data);
    setStatus(status, next);
    if (TERMINAL.has(next)) source.close();
  };
}

async function refreshRuns() {
  const table = document.querySelector("#runs tbody");
  if (!table) return;
  try {
    const r = await fetch("/v1/runs?limit=50", { credentials: "same-origin" });
    if (!r.ok) return;
    const page = await r.json();
    const rows = page.runs.map((run) => {
      const tr = document.createElement("tr");
      tr.dataset.run = run.run_id;
      const a = document.createElement("a");
      a.href = "/runs/" + encodeURIComponent(run.run_id);
      a.textContent = run.run_id;
      const st = document.createElement("span");
      st.dataset.status = "";
      setStatus(st, run.status);
      const cells = [a, document.createTextNode(run.spec_id), st,
        document.createTextNode(String(run.events))];
      for (const c of cells) {
        const td = document.createElement("td");
        td.append(c);
        tr.append(td);
      }
      return tr;
    });
    table.replaceChildren(...rows);
  } catch (_) { /* the next tick tries again */ }
}

function localTimes() {
  for (const t of document.querySelectorAll("time[data-ms]")) {
    t.textContent = new Date(Number(t.dataset.ms)).toLocaleString();
  }
}

document.addEventListener("DOMContentLoaded", () => {
  localTimes();
  const page = document.body.dataset.page;
  if (page === "run") followRun();
  if (page === "runs") setInterval(refreshRuns, 2000);
});
