// An MCP server on stdio (official TypeScript SDK) that keeps a ledger in a file outside
// Warrant: `append` writes one line (its `entry`) to the file named by LEDGER, a little after
// the call arrives and a little before it answers, so a server killed during a call may have
// written the line or not; `count` reads how many lines there are; `redeem` refuses with its
// reason after a long preamble. With EXIT_AFTER_FIRST_COUNT set (a marker file), the first
// server to answer a `count` exits after it. At start it appends its process id to the file named by
// PID_FILE, so a test can kill it. Used by the provider-death test (servers killed between
// and during calls, the ledger judged after) and to test how a provider's words are shown.
const fs = require("fs");
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const { z } = require("zod");

if (process.env.PID_FILE) fs.appendFileSync(process.env.PID_FILE, `${process.pid}\n`);
const lines = () => {
  try {
    return fs.readFileSync(process.env.LEDGER, "utf8").split("\n").filter((l) => l).length;
  } catch {
    return 0;
  }
};
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const server = new McpServer({ name: "ledger", version: "1.0.0" });
server.registerTool(
  "count",
  { description: "How many entries the ledger holds", annotations: { readOnlyHint: true } },
  async () => {
    await pause(15);
    const n = lines();
    // EXIT_AFTER_FIRST_COUNT names a marker file: the first server to count (none made the
    // marker yet) makes it and exits once it has answered, between two calls.
    const marker = process.env.EXIT_AFTER_FIRST_COUNT;
    if (marker && !fs.existsSync(marker)) {
      fs.writeFileSync(marker, "");
      setTimeout(() => process.exit(0), 0);
    }
    return { content: [{ type: "text", text: String(n) }] };
  },
);
server.registerTool(
  "append",
  { description: "Appends one entry to the ledger", inputSchema: { entry: z.string() } },
  async ({ entry }) => {
    await pause(15);
    fs.appendFileSync(process.env.LEDGER, `${entry}\n`);
    await pause(15);
    return { content: [{ type: "text", text: `appended ${entry}` }] };
  },
);
server.registerTool(
  "redeem",
  { description: "Redeems a gift card against the ledger", inputSchema: { card: z.string() } },
  // Refused as some servers refuse: the reason comes after a long preamble.
  async ({ card }) => ({
    isError: true,
    content: [{
      type: "text",
      text: `Error executing tool redeem for card ${card}: ${"validation trace; ".repeat(60)}Insufficient gift card balance to complete the payment`,
    }],
  }),
);
server.connect(new StdioServerTransport());
