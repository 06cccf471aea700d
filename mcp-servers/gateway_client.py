"""Drives a Warrant gateway with the official Python SDK client (`mcp`), following a plan,
and prints what it saw as one JSON object. Usage: python gateway_client.py PLAN_JSON, with the
plan of gateway-client.mjs: {"url", "token"} or {"command", "env"} ("modern": true speaks the
stateless 2026-07-28 protocol to "url"), "answers" (approval
questions, in turn: "approve", "deny", "decline", "cancel"), "calls" [{"name", "arguments",
"meta"}]. Used by crates/warrant-cli/tests/gateway.rs."""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


async def main() -> None:
    plan = json.loads(sys.argv[1])
    answers = plan.get("answers")
    out = {"asked": [], "results": []}

    async def elicit(_context, params):
        out["asked"].append(params.message)
        said = answers.pop(0) if answers else "cancel"
        if said == "approve":
            return types.ElicitResult(action="accept", content={"approve": True})
        if said == "deny":
            return types.ElicitResult(action="accept", content={"approve": False, "reason": "not this one"})
        return types.ElicitResult(action=said)

    async def make_calls(call_tool):
        for call in plan.get("calls", []):
            try:
                r = await call_tool(call)
                out["results"].append(
                    {
                        "isError": bool(r.is_error),
                        "structured": r.structured_content,
                        "content": [c.model_dump(mode="json", by_alias=True) for c in r.content],
                    }
                )
            except Exception as e:  # a protocol error: recorded, the plan goes on
                out["results"].append({"rpcError": str(e)})

    async def session(read, write):
        async with ClientSession(
            read,
            write,
            elicitation_callback=elicit if answers is not None else None,
            client_info=types.Implementation(name="gateway-test-python", version="1.0.0"),
        ) as s:
            init = await s.initialize()
            out["server"] = {"name": init.server_info.name, "version": init.server_info.version}
            out["tools"] = [{"name": t.name} for t in (await s.list_tools()).tools]
            await make_calls(lambda call: s.call_tool(call["name"], call.get("arguments", {}), meta=call.get("meta")))

    if plan.get("modern"):
        # The high-level client: the stateless 2026-07-28 protocol, and input-required results
        # answered through the elicitation callback.
        from mcp.client.client import Client

        async with Client(
            plan["url"],
            mode="2026-07-28",
            elicitation_callback=elicit if answers is not None else None,
            client_info=types.Implementation(name="gateway-test-python-modern", version="1.0.0"),
        ) as c:
            out["tools"] = [{"name": t.name} for t in (await c.list_tools()).tools]
            await make_calls(lambda call: c.call_tool(call["name"], call.get("arguments", {})))
    elif "url" in plan:
        headers = {"Authorization": f"Bearer {plan['token']}"} if plan.get("token") else None
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(plan["url"], http_client=http) as streams:
                await session(streams[0], streams[1])
    else:
        env = {**get_default_environment(), **plan.get("env", {})}
        params = StdioServerParameters(command=plan["command"][0], args=plan["command"][1:], env=env)
        async with stdio_client(params) as (read, write):
            await session(read, write)
    print(json.dumps(out))


asyncio.run(main())
