// A minimal MCP server over stdio (raw JSON-RPC, no SDK) that dies in the middle of a call:
// it answers the handshake and the tool list, then exits when `crash` is called, or when
// `record` is called after appending a line to the file named by $DYING_LOG (the effect
// happened; its answer never comes). Used to test that a server dying mid-call leaves a commit
// in doubt (never recorded as failed, so never repeated), and that nothing hangs. Its `odd`
// tool has a schema that cannot be compiled (calling it would also kill the server).
const fs = require("fs");
const readline = require("readline");
const rl = readline.createInterface({ input: process.stdin });
const send = (msg) => process.stdout.write(JSON.stringify(msg) + "\n");
rl.on("line", (line) => {
  let msg;
  try { msg = JSON.parse(line); } catch { return; }
  if (msg.method === "initialize") {
    send({ jsonrpc: "2.0", id: msg.id, result: {
      protocolVersion: msg.params.protocolVersion,
      capabilities: { tools: {} },
      serverInfo: { name: "dying", version: "1.0.0" },
    } });
  } else if (msg.method === "tools/list") {
    send({ jsonrpc: "2.0", id: msg.id, result: { tools: [
      { name: "ping", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
      { name: "crash", inputSchema: { type: "object" } },
      { name: "record", inputSchema: { type: "object", properties: { note: { type: "string" } } } },
      // A schema no JSON Schema validator can compile (an unbalanced regex): Warrant must
      // refuse the tool, never call it.
      { name: "odd", inputSchema: { type: "object", properties: { q: { type: "string", pattern: "((" } } } },
    ] } });
  } else if (msg.method === "tools/call" && msg.params.name === "ping") {
    send({ jsonrpc: "2.0", id: msg.id, result: { content: [{ type: "text", text: "pong" }] } });
  } else if (msg.method === "tools/call" && msg.params.name === "record") {
    fs.appendFileSync(process.env.DYING_LOG, JSON.stringify(msg.params.arguments) + "\n");
    process.exit(3);
  } else if (msg.method === "tools/call") {
    process.exit(3);
  } else if (msg.id !== undefined && msg.method === "ping") {
    send({ jsonrpc: "2.0", id: msg.id, result: {} });
  } else if (msg.id !== undefined) {
    // Anything else (`server/discover`, for one) is unknown here, as JSON-RPC says.
    send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "Method not found" } });
  }
});
