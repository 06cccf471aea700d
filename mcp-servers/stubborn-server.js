// An MCP server on stdio (official TypeScript SDK) that does not go quietly: it keeps running
// after its input ends, ignores SIGTERM, and starts a grandchild (`sleep MARKER`) that lives
// as long as nobody ends it. Its first argument, MARKER, is a number every process of it
// carries on its command line, so a test can count what is left. Tools: `ping` (answers at
// once) and `hold` (answers after a minute unless cancelled). Used by the process-leak test.
const { spawn } = require("child_process");
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");

const marker = process.argv[2] || "600";
spawn("sleep", [marker], { stdio: "ignore" });
process.on("SIGTERM", () => {});
setInterval(() => {}, 1 << 30);

const server = new McpServer({ name: "stubborn", version: "1.0.0" });
server.registerTool("ping", { annotations: { readOnlyHint: true } }, async () => ({
  content: [{ type: "text", text: "pong" }],
}));
server.registerTool("hold", { annotations: { readOnlyHint: true } }, async (extra) =>
  new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ content: [{ type: "text", text: "held" }] }), 60000);
    extra.signal.addEventListener("abort", () => clearTimeout(timer));
  }),
);
server.connect(new StdioServerTransport());
