// The client library against a live `warrant serve` (started by
// `crates/warrant-cli/tests/api_clients.rs`, which installs the package tarball it packed and
// runs `node --test` on this file). Environment: WARRANT_URL, the server; WARRANT_DIGESTS, a
// JSON file of values and the digests the server's own code gives them.
"use strict";
const { test } = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const net = require("node:net");
const {
  Warrant, DigestMismatch, IdempotencyKeyReused, Invalid, NotFound, ProblemError,
  canonicalJson, digest, parseLossless,
} = require("warrant-client");

const URL = process.env.WARRANT_URL;
const SPEC = "pay-rent/spec.yaml";
const w = new Warrant(URL);
const start = (key) =>
  w.startRun({ spec_path: SPEC, ask_tools: ["transfer"] }, key ? { idempotencyKey: key } : {});

/** A loopback TCP proxy that cuts each of its first `cuts` connections after `after` bytes of
 * the server's answer: a connection that drops mid-stream. */
function cuttingProxy(cuts, after) {
  const target = new globalThis.URL(URL);
  let connections = 0;
  const server = net.createServer((client) => {
    connections += 1;
    const limit = connections <= cuts ? after : Infinity;
    let sent = 0;
    const upstream = net.connect(Number(target.port), target.hostname);
    client.on("data", (d) => upstream.write(d));
    upstream.on("data", (d) => {
      if (sent + d.length >= limit) {
        client.end(d.subarray(0, limit - sent));
        upstream.destroy();
        return;
      }
      sent += d.length;
      client.write(d);
    });
    const close = () => { client.destroy(); upstream.destroy(); };
    client.on("error", close);
    upstream.on("error", close);
    client.on("close", close);
    upstream.on("close", close);
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${server.address().port}`,
        connections: () => connections,
        close: () => server.close(),
      })));
}

test("a key starts one run and refuses another body", async () => {
  const key = `ts-${Date.now()}-${Math.random()}`;
  const first = await start(key);
  const again = await start(key);
  assert.equal(again.run_id, first.run_id);
  await assert.rejects(w.startRun({ spec_path: SPEC }, { idempotencyKey: key }), (e) =>
    e instanceof IdempotencyKeyReused && e.status === 409);
  await w.cancel(first.run_id, "the test is done with it");
});

test("problems are typed", async () => {
  await assert.rejects(w.run("no-such-run"), (e) =>
    e instanceof NotFound && e.status === 404 && e.detail.includes("no-such-run"));
  await assert.rejects(w.startRun({ spec: { objective: "a spec with no steps" } }), (e) =>
    e instanceof Invalid && e instanceof ProblemError && e.type === "urn:warrant:problem:invalid");
});

test("the digest is computed as the server computes it", async () => {
  const vectors = JSON.parse(fs.readFileSync(process.env.WARRANT_DIGESTS, "utf8"));
  assert.ok(vectors.length > 5);
  for (const v of vectors) {
    assert.equal(canonicalJson(parseLossless(v.json)), v.canonical, v.json);
    assert.equal(await digest(parseLossless(v.json)), v.digest, v.json);
  }
});

test("an approval is checked against what was shown, then the run ends", async () => {
  const run = (await start()).run_id;
  const asked = await w.waitForApproval(run);
  assert.equal(asked.tool, "transfer");

  // Arguments that are not the ones the digest binds: refused here, nothing sent.
  const altered = { ...asked, args: { ...asked.args, amount: 1 } };
  await assert.rejects(w.approve(altered), (e) =>
    e instanceof DigestMismatch && e.detail.includes("nothing was sent"));
  assert.deepEqual((await w.approvals(run)).map((a) => a.request), [asked.request]);

  // Consistent, but not what the server holds: the server refuses it (409).
  const forged = { ...altered, args_digest: await digest(altered.args) };
  await assert.rejects(w.approve(forged), (e) =>
    e instanceof DigestMismatch && e.status === 409 && !e.detail.includes("nothing was sent"));

  const answer = await w.approve(asked);
  assert.equal(answer.status, "approved");
  const ended = await w.wait(run);
  assert.equal(ended.status, "attained");
  assert.equal((await w.report(run)).status, "attained");
});

test("the follower resumes from the last event after a dropped connection", async () => {
  const run = (await start()).run_id;
  await w.approve(await w.waitForApproval(run));
  await w.wait(run);
  const whole = [];
  for await (const e of w.events(run)) whole.push(e.seq);
  assert.deepEqual(whole, whole.map((_, k) => k + 1));

  const proxy = await cuttingProxy(3, 1200);
  const seen = [];
  try {
    for await (const e of new Warrant(proxy.url).events(run)) seen.push(e.seq);
  } finally {
    proxy.close();
  }
  assert.ok(proxy.connections() > 3, "the stream was cut and joined again");
  assert.deepEqual(seen, whole, "each event once, in order, none lost");

  const tail = [];
  for await (const e of w.events(run, { lastEventId: whole[whole.length - 3] })) tail.push(e.seq);
  assert.deepEqual(tail, whole.slice(-2));
});
