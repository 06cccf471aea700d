// An MCP server on stdio (official TypeScript SDK) whose tools change while it runs, and which
// records cancellations. Tests use it for two behaviours real servers rarely show on demand:
// - `grow` registers a new tool `extra`, so the SDK sends `notifications/tools/list_changed`;
// - `slow` waits 30 s unless the client cancels it; a cancellation is appended to the file
//   named by CANCEL_LOG (one line: `cancelled <reason>`);
// - `note` keeps a text (appended to the file named by NOTES_LOG), and `reshape` changes
//   `note`'s input schema (adds `tag`), so the list changes under a call that uses it.
const fs = require("fs");
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");

const server = new McpServer({ name: "changing", version: "1.0.0" });
server.registerTool("grow", { description: "adds the tool `extra`" }, async () => {
  server.registerTool("extra", { description: "added at run time" }, async () => ({
    content: [{ type: "text", text: "extra" }],
  }));
  return { content: [{ type: "text", text: "grown" }] };
});
server.registerTool(
  "slow",
  { description: "answers after 30 s", annotations: { readOnlyHint: true } },
  // A tool without an input schema gets only the request context.
  async (extra) =>
    new Promise((resolve) => {
      const timer = setTimeout(() => resolve({ content: [{ type: "text", text: "late" }] }), 30000);
      extra.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        if (process.env.CANCEL_LOG) {
          fs.appendFileSync(process.env.CANCEL_LOG, `cancelled ${extra.signal.reason ?? ""}\n`);
        }
        resolve({ content: [{ type: "text", text: "cancelled" }], isError: true });
      });
    }),
);
const { z } = require("zod");
const note = server.registerTool(
  "note",
  { description: "keeps a note", inputSchema: { text: z.string() } },
  async ({ text }) => {
    if (process.env.NOTES_LOG) fs.appendFileSync(process.env.NOTES_LOG, `${text}\n`);
    return { content: [{ type: "text", text: "noted" }] };
  },
);
server.registerTool("reshape", { description: "changes the input schema of `note`" }, async () => {
  note.update({ paramsSchema: { text: z.string(), tag: z.string().optional() } });
  return { content: [{ type: "text", text: "reshaped" }] };
});
server.connect(new StdioServerTransport());
