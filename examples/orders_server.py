"""The orders shop on the SDK's high-level `MCPServer`, with an exactly-once "cancel order".

python examples/orders_server.py --db orders.sqlite3             # stdio
python examples/orders_server.py --db orders.sqlite3 --http 8000 # Streamable HTTP, /mcp
python examples/orders_server.py --db postgresql://127.0.0.1/shop --key-file shop.key --http 8000
"""

from __future__ import annotations

import argparse

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from orders import call_cancel, cancel_action, open_orders, parse_args, request_state_security


def build(args: argparse.Namespace) -> MCPServer:
    action = cancel_action(open_orders(args.db), args.ttl)
    mcp = MCPServer("orders", request_state_security=request_state_security(action, args.key_file))

    @mcp.tool(description="Cancel one of a customer's open orders; the user picks it and confirms.")
    async def cancel_order(customer: str, ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
        return await call_cancel(action, args.principal, customer, ctx.request_state, ctx.input_responses)

    return mcp


if __name__ == "__main__":
    args = parse_args(__doc__.splitlines()[0])
    server = build(args)
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run()
