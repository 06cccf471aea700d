// Drives Warrant's own MCP server with the official TypeScript SDK client, and prints what it
// saw as one JSON object. Usage: node drive-warrant.mjs <warrant binary> <provider>
// Used by crates/warrant-cli/tests/mcp.rs (which asserts on the output).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [warrant, provider] = process.argv.slice(2);
const client = new Client({ name: "warrant-test-client", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command: warrant, args: ["mcp-serve", provider] }));

const out = { server: client.getServerVersion() };
const { tools } = await client.listTools();
out.tools = tools.map((t) => ({ name: t.name, annotations: t.annotations, schema: t.inputSchema }));
const call = async (name, args, meta) => {
  try {
    const r = await client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) });
    return { isError: r.isError ?? false, structured: r.structuredContent ?? null, content: r.content };
  } catch (e) {
    return { rpcError: String(e.message ?? e) };
  }
};
out.menu = await call("read_menu", {});
const order = { size: "medium", milk: "oat" };
const key = { "warrant/idempotencyKey": "wk-test-1" };
out.first = await call("order_latte", order, key);
out.repeat = await call("order_latte", order, key);
out.unkeyed = await call("order_latte", order);
out.invalid = await call("order_latte", { size: "huge" });
out.unknown = await call("no_such_tool", {});
console.log(JSON.stringify(out));
await client.close();
