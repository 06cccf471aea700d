// Drives `warrant serve` through a client generated from its OpenAPI document by
// @hey-api/openapi-ts: create with an idempotency key, follow the events, approve with the
// digest shown, fetch the report. Compiled with the generated client (./gen) and run by
// `crates/warrant-cli/tests/api_clients.rs`; argv: the server's base URL, the spec path.
import { client } from "./gen/client.gen.js";
import {
  approve, getRun, getRunReport, listApprovals, listRunEvents, startRun,
} from "./gen/sdk.gen.js";
import type { Problem, RunRef } from "./gen/types.gen.js";

// Node's own, declared here so the scenario needs no type packages.
declare const process: { argv: string[]; exit(code: number): never };

const [base, spec] = process.argv.slice(2);
client.setConfig({ baseUrl: base });

function check(cond: boolean, what: string): asserts cond {
  if (!cond) throw new Error("scenario failed: " + what);
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  // Create, then the same request again with its key: the same run, 201 then 200.
  const body = { spec_path: spec, ask_tools: ["transfer"] };
  const headers = { "Idempotency-Key": "scenario-ts" };
  const first = await startRun({ body, headers });
  check(first.response.status === 201 && first.data !== undefined, `create: ${first.response.status}`);
  const again = await startRun({ body, headers });
  check(again.response.status === 200, `retry: ${again.response.status}`);
  const run: RunRef["run_id"] = first.data.run_id;
  check(again.data?.run_id === run, "the same run");

  // Follow the events a page at a time until the run asks for an approval.
  const seen: string[] = [];
  let from = 1;
  for (let i = 0; i < 400 && !seen.includes("approval_requested"); i++) {
    const page = await listRunEvents({ path: { id: run }, query: { from } });
    check(page.data !== undefined, "events");
    seen.push(...page.data.events.map((e) => e.type));
    from = page.data.next;
    if (!seen.includes("approval_requested")) await sleep(50);
  }
  check(seen.includes("approval_requested"), `events: ${seen}`);

  // Approve with the digest shown; another digest is a typed problem (409).
  const pending = await listApprovals({ query: { run } });
  check(pending.data?.length === 1, "one approval");
  const request = pending.data[0];
  const wrong = await approve({
    path: { id: request.request },
    body: { args_digest: "sha256:" + "0".repeat(64) },
  });
  const problem = wrong.error as Problem | undefined;
  check(wrong.response.status === 409 && problem?.status === 409, `wrong digest: ${wrong.response.status}`);
  const done = await approve({ path: { id: request.request }, body: { args_digest: request.args_digest } });
  check(done.response.status === 200, `approve: ${done.response.status}`);

  // The run goes on to its end; its report says so.
  let status = "";
  for (let i = 0; i < 400 && status !== "attained"; i++) {
    const view = await getRun({ path: { id: run } });
    status = view.data?.status ?? "";
    if (status !== "attained") await sleep(50);
  }
  check(status === "attained", `status: ${status}`);
  const report = await getRunReport({ path: { id: run } });
  check(report.data?.status === "attained", `report: ${report.data?.status}`);
  console.log(`typescript: ${run} attained; ${seen.length} events followed before the approval`);
}

main().catch((e) => { console.error(String(e)); process.exit(1); });
