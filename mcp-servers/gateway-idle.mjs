// Opens N sessions to a gateway over Streamable HTTP, each making one call and then staying
// open and idle, and holds them until stdin closes. Prints "ready" once all are open. Usage:
// node gateway-idle.mjs URL N TOOL [ARGS] (N at most 2000; TOOL `-`: no call, so the session
// is only the protocol's, with no run; ARGS: the call's arguments as JSON, default
// {"message": "hi"}). Used by .ci/gateway-bench to measure the gateway's memory
// per idle session.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, n, tool, args] = process.argv.slice(2);
const callArgs = args ? JSON.parse(args) : { message: "hi" };
const clients = [];
for (let i = 0; i < Math.min(Number(n), 2000); i++) {
  const client = new Client({ name: `idle-${i}`, version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  if (tool !== "-") await client.callTool({ name: tool, arguments: callArgs });
  clients.push(client);
}
console.log("ready");
process.stdin.resume();
process.stdin.on("end", async () => {
  for (const c of clients) await c.close();
  process.exit(0);
});
