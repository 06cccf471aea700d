"""Opens N stateless (2026-07-28) sessions to a gateway: N clients, each named apart, each
making one call and leaving (such a client keeps no connection; the gateway keeps its session
until `limits.idle_ms`). Prints "ready" once all made their call. Usage:
python gateway_idle_stateless.py URL N TOOL (N at most 20000). Used by .ci/gateway-bench to
measure the gateway's memory per idle stateless session."""

import asyncio
import sys

from mcp import types
from mcp.client.client import Client


async def one(url: str, i: int, tool: str) -> None:
    async with Client(
        url,
        mode="2026-07-28",
        client_info=types.Implementation(name=f"idle-{i}", version="1.0.0"),
    ) as c:
        await c.call_tool(tool, {"message": "hi"})


async def main() -> None:
    url, n, tool = sys.argv[1], min(int(sys.argv[2]), 20000), sys.argv[3]
    # A few at a time: the gateway's sessions are what is measured, not a burst.
    for start in range(0, n, 20):
        await asyncio.gather(*(one(url, i, tool) for i in range(start, min(start + 20, n))))
    print("ready", flush=True)


asyncio.run(main())
