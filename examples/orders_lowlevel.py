"""The orders shop on the SDK's lowlevel `Server`, with the same exactly-once "cancel order".

    python examples/orders_lowlevel.py --db orders.sqlite3             # stdio
    python examples/orders_lowlevel.py --db orders.sqlite3 --http 8000 # Streamable HTTP, /mcp
    python examples/orders_lowlevel.py --db postgresql://127.0.0.1/shop --key-file shop.key --http 8000

The lowlevel tier installs no `requestState` sealing by itself: the `RequestStateBoundary`
middleware below is what seals and verifies it (the SDK's; `notewarden.confirm` never seals).
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary
from mcp.server.stdio import stdio_server
from orders import (
    CANCEL_ORDER,
    call_cancel,
    cancel_action,
    open_orders,
    parse_args,
    request_state_security,
)


def build(args: Any) -> Server[Any]:
    action = cancel_action(open_orders(args.db), args.ttl)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[CANCEL_ORDER])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        customer = str((params.arguments or {}).get("customer", ""))
        return await call_cancel(
            action, args.principal, customer, params.request_state, params.input_responses
        )

    server: Server[Any] = Server("orders", on_list_tools=list_tools, on_call_tool=call_tool)
    security = request_state_security(action, args.key_file)
    server.middleware.append(RequestStateBoundary(security, default_audience="orders"))
    return server


async def serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    args = parse_args(__doc__.splitlines()[0])
    server = build(args)
    if args.http:
        uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=args.http, log_level="warning")
    else:
        anyio.run(serve_stdio, server)
