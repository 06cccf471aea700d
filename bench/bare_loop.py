#!/usr/bin/env python3
"""The "tool loop" workload of BENCH-WORKLOAD.md with no framework at all: the baseline
Warrant is compared against, run on the same machine in the same session (`bench/compare`).

Memory mode keeps each run's records in a list. Durable mode records to a SQLite file in WAL
mode with synchronous=FULL (every commit fsynced, so it survives power loss as well as a
crash): one writer thread takes every record waiting, commits them in one transaction (group
commit) and then wakes the runs whose records it held. Each run records its decision before it
calls the tool and the tool's result with its next decision, and waits for that commit before
it acts: one fsynced commit per step, shared by every run waiting at that moment.

Prints one JSON line in the workload's format.
"""

import argparse
import asyncio
import json
import os
import queue
import resource
import sqlite3
import statistics
import sys
import tempfile
import threading
import time

LOREM = (
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt "
    "ut labore et dolore magna aliqua ut enim ad minim veniam quis nostrud exercitation ullamco"
)


class StepTool:
    """`step`: read-only, in-process, no IO; counts its executions."""

    def __init__(self):
        self.calls = 0

    def __call__(self, i):
        self.calls += 1
        value = (i * 7919) % 10007
        base = len(json.dumps({"step": i, "status": "ok", "value": value, "note": ""},
                              separators=(",", ":")))
        return {"step": i, "status": "ok", "value": value, "note": LOREM[: 200 - base]}


def decide(last, steps):
    """The workload's decider: a function of the run so far (its last result)."""
    if last is None or last.get("status") != "ok":
        return {"call": "step", "args": {"i": 0}}
    nxt = last["step"] + 1
    if nxt < steps:
        return {"call": "step", "args": {"i": nxt}}
    return {"done": f"done: {steps} steps"}


class MemoryLog:
    def __init__(self):
        self.rows = []

    async def record(self, rows):
        self.rows.extend(rows)


class GroupCommit:
    """One writer thread committing every waiting record in one fsynced transaction."""

    def __init__(self, path):
        self.path = path
        self.queue = queue.SimpleQueue()
        self.loop = None
        self.thread = threading.Thread(target=self._write, daemon=True)
        self.thread.start()

    def _write(self):
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute(
            "CREATE TABLE IF NOT EXISTS events "
            "(run_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, "
            "PRIMARY KEY (run_id, seq))"
        )
        while True:
            first = self.queue.get()
            if first is None:
                break
            batch = [first]
            while True:
                try:
                    item = self.queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self.queue.put(None)
                    break
                batch.append(item)
            db.execute("BEGIN IMMEDIATE")
            db.executemany(
                "INSERT INTO events (run_id, seq, body) VALUES (?, ?, ?)",
                [row for rows, _ in batch for row in rows],
            )
            db.execute("COMMIT")
            futures = [f for _, f in batch]
            self.loop.call_soon_threadsafe(_wake, futures)
        db.close()

    async def record(self, rows):
        fut = self.loop.create_future()
        self.queue.put((rows, fut))
        await fut

    def close(self):
        self.queue.put(None)
        self.thread.join()


def _wake(futures):
    for f in futures:
        if not f.done():
            f.set_result(None)


async def one_run(run_id, steps, tool, log):
    objective = f"K={steps}; Run the tool loop: call step with i = 0, 1, 2, ... until told to stop."
    seq = 1
    rows = [(run_id, seq, json.dumps({"kind": "run_started", "objective": objective}))]
    last = None
    while True:
        decision = decide(last, steps)
        seq += 1
        rows.append((run_id, seq, json.dumps({"kind": "decided", "decision": decision})))
        # Durable before the run acts on it (with the result it was decided from).
        await log.record(rows)
        if "done" in decision:
            return decision["done"]
        last = tool(**decision["args"])
        seq += 1
        rows = [(run_id, seq, json.dumps({"kind": "result", "output": last}))]


def cpu_s():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def rss_mb():
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            name, _, rest = line.partition(":")
            fields[name] = rest.split()
    return float(fields["VmRSS"][0]) / 1024, float(fields["VmHWM"][0]) / 1024


async def batch(steps, runs, tool, log, tag):
    before = tool.calls
    c0, t0 = cpu_s(), time.perf_counter()
    done = await asyncio.gather(*(one_run(f"{tag}-{n}", steps, tool, log) for n in range(runs)))
    wall, cpu = time.perf_counter() - t0, cpu_s() - c0
    want = f"done: {steps} steps"
    if any(d != want for d in done) or tool.calls - before != steps * runs:
        sys.exit(f"check failed: {tool.calls - before} tool runs, expected {steps * runs}")
    return wall, cpu


async def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--runs", type=int, required=True)
    p.add_argument("--durable", action="store_true")
    p.add_argument("--repeat", type=int)
    a = p.parse_args()
    if a.steps < 1 or a.runs < 1:
        sys.exit("--steps and --runs must be at least 1")
    # As `warrant bench`: one batch for R >= 1000, else enough for 1,000 steps and at least 3.
    default = 1 if a.runs >= 1000 else max(3, -(-1000 // (a.steps * a.runs)))
    repeat = max(1, a.repeat or default)
    tool = StepTool()
    scratch = None
    if a.durable:
        scratch = tempfile.mkdtemp(prefix="bare-loop-")
        log = GroupCommit(os.path.join(scratch, "bare.db"))
        log.loop = asyncio.get_running_loop()
    else:
        log = MemoryLog()
    # Untimed, two calls a run at the cell's concurrency (as `warrant bench` warms up).
    await batch(2, a.runs, tool, log, "warmup")
    rss_before, _ = rss_mb()
    results = [await batch(a.steps, a.runs, tool, log, f"b{n}") for n in range(repeat)]
    _, peak = rss_mb()
    if scratch:
        log.close()
        for name in os.listdir(scratch):
            os.remove(os.path.join(scratch, name))
        os.rmdir(scratch)
    walls = sorted(w for w, _ in results)
    median = statistics.median_low(walls)
    cpu = next(c for w, c in results if w == median)
    total = a.steps * a.runs
    print(json.dumps({
        "peer": "python-bare",
        "variant": "sqlite-wal-fsync-group-commit" if a.durable else "memory",
        "steps": a.steps, "runs": a.runs, "durable": a.durable, "repeats": repeat,
        "wall_s": median, "steps_per_s": total / median, "runs_per_s": a.runs / median,
        "per_step_us": median * 1e6 / total,
        "per_step_us_min": walls[0] * 1e6 / total, "per_step_us_max": walls[-1] * 1e6 / total,
        "cpu_s": cpu, "cpu_per_step_us": cpu * 1e6 / total,
        "rss_before_runs_mb": rss_before, "peak_rss_mb": peak, "tool_calls": total,
        "versions": {"python": sys.version.split()[0], "sqlite": sqlite3.sqlite_version,
                     "fsync": a.durable},
    }))


if __name__ == "__main__":
    asyncio.run(main())
