// Warrant's console: follows a run's events live (Server-Sent Events) and keeps the runs
// list fresh. No inline script, no HTML built from strings: text goes in as text.
"use strict";

const TERMINAL = new Set(["attained", "not_attained", "failed", "cancelled", "exhausted"]);

// The run's page follows its events: at each one, the whole view is fetched again and put in
// place of the old, so the page always says what a reload would (one state, never a badge
// ahead of the rest). Events that come while a fetch is under way make one more fetch.
function followRun() {
  const view = document.getElementById("run-view");
  const timeline = document.getElementById("timeline");
  const status = document.getElementById("status");
  if (!view || !timeline || !status || TERMINAL.has(status.textContent)) return;
  const run = timeline.dataset.run;
  const source = new EventSource(
    "/v1/runs/" + encodeURIComponent(run) + "/events?from=" + timeline.dataset.from);
  let fetching = false;
  let again = false;
  const refresh = async () => {
    if (fetching) { again = true; return; }
    fetching = true;
    try {
      do {
        again = false;
        const r = await fetch(location.pathname, { credentials: "same-origin" });
        if (!r.ok) break;
        const fresh = new DOMParser()
          .parseFromString(await r.text(), "text/html")
          .getElementById("run-view");
        const current = document.getElementById("run-view");
        if (!fresh || !current) break;
        current.replaceWith(document.importNode(fresh, true));
        localTimes();
        const now = document.getElementById("status");
        if (now && TERMINAL.has(now.textContent)) source.close();
      } while (again);
    } catch (_) { /* the next event tries again */ }
    fetching = false;
  };
  source.onmessage = () => { refresh(); };
}

// The runs list, with its filters, fetched again as the server renders it and put in place
// of the old: the list a reload would show.
async function refreshRuns() {
  if (!document.getElementById("runs-view")) return;
  try {
    const r = await fetch(location.href, { credentials: "same-origin" });
    if (!r.ok) return;
    const fresh = new DOMParser()
      .parseFromString(await r.text(), "text/html")
      .getElementById("runs-view");
    const current = document.getElementById("runs-view");
    if (!fresh || !current) return;
    current.replaceWith(document.importNode(fresh, true));
    localTimes();
  } catch (_) { /* the next tick tries again */ }
}

function localTimes() {
  for (const t of document.querySelectorAll("time[data-ms]")) {
    t.textContent = new Date(Number(t.dataset.ms)).toLocaleString();
  }
}

// How many approval requests of the caller's tenant wait, in the navigation of every page.
async function refreshPending() {
  const count = document.getElementById("pending");
  if (!count) return;
  try {
    const r = await fetch("/v1/approvals", { credentials: "same-origin" });
    if (!r.ok) return;
    const pending = (await r.json()).length;
    count.textContent = pending > 0 ? String(pending) : "";
  } catch (_) { /* the next tick tries again */ }
}

// A form that ends something asks first (`data-confirm`); the run page's view is swapped
// whole at each event, so the question is asked of whichever form is submitted.
function confirmEnds() {
  document.addEventListener("submit", (ev) => {
    const form = ev.target;
    if (form instanceof HTMLFormElement && form.dataset.confirm
        && !window.confirm(form.dataset.confirm)) {
      ev.preventDefault();
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  localTimes();
  confirmEnds();
  refreshPending();
  setInterval(refreshPending, 2000);
  const page = document.body.dataset.page;
  if (page === "run") followRun();
  if (page === "runs") setInterval(refreshRuns, 2000);
});
