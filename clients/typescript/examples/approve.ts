// Starts a run that needs a person's approval, waits for the request, approves it as shown,
// and prints the outcome. Usage: node approve.js [SERVER_URL]
import { Warrant } from "warrant-client";

declare const process: { argv: string[]; exitCode?: number };

async function main() {
  const w = new Warrant(process.argv[2] ?? "http://127.0.0.1:7800");
  const run = await w.startRun({ spec_path: "pay-rent/spec.yaml", ask_tools: ["transfer"] });
  console.log(`started ${run.run_id}`);

  const asked = await w.waitForApproval(run.run_id);
  console.log(`${asked.tool} on ${asked.provider} asks: ${asked.reason}`);
  console.log(`  arguments ${JSON.stringify(asked.args)} (${asked.args_digest.slice(0, 19)}…)`);
  await w.approve(asked);

  const ended = await w.wait(run.run_id);
  console.log(`${ended.run_id}: ${ended.status}`);
}

main().catch((e) => {
  console.error(String(e));
  process.exitCode = 1;
});
