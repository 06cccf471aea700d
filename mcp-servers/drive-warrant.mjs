// Drives Warrant's own MCP server with the official TypeScript SDK client, and prints what it
// saw as one JSON object. Usage: node drive-warrant.mjs <warrant binary> <provider>
// (stdio: the script starts `warrant mcp-serve <provider>`), or
// node drive-warrant.mjs --url http://127.0.0.1:PORT/mcp (a server already serving the cafe).
// Used by crates/warrant-cli/tests/mcp.rs (which asserts on the output).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [first, second] = process.argv.slice(2);
const transport =
  first === "--url"
    ? new StreamableHTTPClientTransport(new URL(second))
    : new StdioClientTransport({
        command: first,
        args: ["mcp-serve", second],
        // The gateway records each session in the store the test names.
        env: { ...getDefaultEnvironment(), WARRANT_STORE: process.env.WARRANT_STORE ?? "" },
      });
const client = new Client({ name: "warrant-test-client", version: "1.0.0" });
await client.connect(transport);

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
