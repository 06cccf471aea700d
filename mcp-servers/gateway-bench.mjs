// Measures the latency of `tools/call` as the official TypeScript SDK client sees it, talking
// to a server directly or through a Warrant gateway. Usage: node gateway-bench.mjs PLAN_JSON
// with {"command": [...], "env": {...}} (stdio) or {"url": ...}, "tool", "arguments", "calls"
// (timed, at most 100000) and "warmup" (untimed first). Prints {"n", "p50_ms", "p99_ms",
// "mean_ms"}. Used by .ci/gateway-bench.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { performance } from "node:perf_hooks";

const plan = JSON.parse(process.argv[2]);
const calls = Math.min(plan.calls ?? 1000, 100000);
const warmup = Math.min(plan.warmup ?? 100, 10000);
const transport = plan.url
  ? new StreamableHTTPClientTransport(new URL(plan.url))
  : new StdioClientTransport({
      command: plan.command[0],
      args: plan.command.slice(1),
      env: { ...getDefaultEnvironment(), ...(plan.env ?? {}) },
      stderr: "ignore",
    });
const client = new Client({ name: "gateway-bench", version: "1.0.0" });
await client.connect(transport);
const call = () => client.callTool({ name: plan.tool, arguments: plan.arguments ?? {} });
for (let i = 0; i < warmup; i++) {
  const r = await call();
  if (r.isError) throw new Error(`the call failed: ${JSON.stringify(r.content)}`);
}
const took = [];
for (let i = 0; i < calls; i++) {
  const t0 = performance.now();
  await call();
  took.push(performance.now() - t0);
}
took.sort((a, b) => a - b);
const at = (q) => took[Math.min(took.length - 1, Math.floor(q * took.length))];
const mean = took.reduce((a, b) => a + b, 0) / took.length;
console.log(JSON.stringify({ n: took.length, p50_ms: at(0.5), p99_ms: at(0.99), mean_ms: mean }));
await client.close();
