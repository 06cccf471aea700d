"""An agent framework's MCP client in front of a Warrant gateway: a Pydantic AI agent whose model
is a script (a function model: no network, no model), using the gateway as its MCP toolset.
The "model" reads `inbox.txt`, then writes what it read to `notes/agent.txt` — the move a prompt
injection asks for — and ends with a text saying what became of the write (`the write: ...`).
Usage: python gateway_agent.py URL. Prints {"final"} as JSON.
Used by crates/warrant-cli/tests/gateway.rs."""

import asyncio
import json
import sys

from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel


def script(messages, info: AgentInfo) -> ModelResponse:
    """The scripted model: one move per turn, from what the tools returned so far."""
    returns = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, (ToolReturnPart, RetryPromptPart))]
    if not returns:
        return ModelResponse(parts=[ToolCallPart("read_text_file", {"path": "inbox.txt"})])
    if len(returns) == 1:
        content = returns[0].content
        text = content if isinstance(content, str) else json.dumps(content)
        try:
            text = json.loads(text)["content"]
        except (ValueError, KeyError, TypeError):
            pass
        return ModelResponse(parts=[ToolCallPart("write_file", {"path": "notes/agent.txt", "content": text})])
    last = returns[-1]
    said = last.content if isinstance(last.content, str) else json.dumps(last.content, default=str)
    return ModelResponse(parts=[TextPart(f"the write: {said}")])


async def main() -> None:
    toolset = MCPToolset(sys.argv[1], max_retries=1, read_timeout=120)
    agent = Agent(FunctionModel(script), toolsets=[toolset])
    async with agent:
        result = await agent.run("Copy the inbox into a note.")
    print(json.dumps({"final": result.output}))


asyncio.run(main())
