// Drives a Warrant gateway with the official TypeScript SDK client, following a plan, and
// prints what it saw as one JSON object. Usage: node gateway-client.mjs PLAN_JSON, where the
// plan is {"url": "http://127.0.0.1:PORT/mcp", "token": "..."} or {"command": [...], "env":
// {...}} (stdio), "answers": what the person says to each question in turn ("approve",
// "deny", "decline" or "cancel"; an object accepts with that content; elicitation is declared
// only when given), and
// "calls": [{"name", "arguments", "meta"}] made in order; an argument written
// {"$text_of": N} is the text of the first content block of result N, exactly as the client
// received it. Used by crates/warrant-cli/tests/gateway.rs.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const plan = JSON.parse(process.argv[2]);
const transport = plan.url
  ? new StreamableHTTPClientTransport(new URL(plan.url), {
      requestInit: plan.token ? { headers: { Authorization: `Bearer ${plan.token}` } } : undefined,
    })
  : new StdioClientTransport({
      command: plan.command[0],
      args: plan.command.slice(1),
      env: { ...getDefaultEnvironment(), ...(plan.env ?? {}) },
      stderr: "inherit",
    });
const answers = plan.answers ?? null;
const client = new Client(
  { name: "gateway-test-ts", version: "1.0.0" },
  { capabilities: answers ? { elicitation: { form: {} } } : {} },
);
const out = { asked: [], results: [], listChanged: 0 };
if (answers) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    out.asked.push(request.params.message);
    const said = answers.shift() ?? "cancel";
    if (typeof said === "object") return { action: "accept", content: said };
    if (said === "approve") return { action: "accept", content: { approve: true } };
    if (said === "deny") return { action: "accept", content: { approve: false, reason: "not this one" } };
    return { action: said };
  });
}
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  out.listChanged += 1;
});
await client.connect(transport);
out.server = client.getServerVersion();
out.tools = (await client.listTools()).tools.map((t) => ({ name: t.name, annotations: t.annotations }));
// An argument that names an earlier result stands for the text the client read there.
const filled = (args) =>
  Object.fromEntries(
    Object.entries(args ?? {}).map(([k, v]) =>
      v && typeof v === "object" && "$text_of" in v ? [k, out.results[v.$text_of].content[0].text] : [k, v],
    ),
  );
for (const call of plan.calls ?? []) {
  try {
    const r = await client.callTool(
      { name: call.name, arguments: filled(call.arguments), ...(call.meta ? { _meta: call.meta } : {}) },
      undefined,
      { timeout: plan.timeoutMs ?? 60000 },
    );
    out.results.push({ isError: r.isError ?? false, structured: r.structuredContent ?? null, content: r.content });
  } catch (e) {
    out.results.push({ rpcError: String(e.message ?? e) });
  }
  if (call.pauseMs) await new Promise((resolve) => setTimeout(resolve, call.pauseMs));
}
console.log(JSON.stringify(out));
await client.close();
