"""A shop's orders in SQLite or PostgreSQL, and its confirmed "cancel order" (`notewarden.confirm`).

Everything here is the shop's own code; the two servers (`orders_server.py` on the SDK's
`MCPServer`, `orders_lowlevel.py` on its lowlevel `Server`) only wire it to a tool.

The orders table lives in the ledger's database (`ORDERS`, a schema component the ledger creates
and upgrades), so the effect updates it through the transaction that claims the confirmation:
an order is cancelled exactly when its confirmation is consumed, never one without the other.

`--db shop.sqlite3` keeps it in a SQLite file (one host); `--db postgresql://…` in PostgreSQL,
which any number of server processes share: start each with the same `--key-file`.
"""

from __future__ import annotations

import argparse
import os
import secrets
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.request_state import RequestStateSecurity

from notewarden.confirm import (
    Answer,
    Candidate,
    Confirmed,
    ConfirmedAction,
    Done,
    Ledger,
    Offer,
    Refusal,
    SchemaComponent,
    ToolResult,
    open_postgres_ledger,
    open_sqlite_ledger,
    pick_one_form,
    retriable,
    sealing,
)

ORDERS = SchemaComponent(
    "orders",
    tables=("orders",),
    sqlite=(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, item TEXT NOT NULL, "
        "status TEXT NOT NULL DEFAULT 'open', version INTEGER NOT NULL DEFAULT 1)",
    ),
    postgres=(
        "CREATE TABLE orders (id BIGSERIAL PRIMARY KEY, customer TEXT NOT NULL, item TEXT NOT NULL, "
        "status TEXT NOT NULL DEFAULT 'open', version INTEGER NOT NULL DEFAULT 1)",
    ),
)
CANCEL_ORDER = types.Tool(
    name="cancel_order",
    description="Cancel one of a customer's open orders; the user picks it and confirms.",
    input_schema={
        "type": "object",
        "properties": {"customer": {"type": "string", "minLength": 1}},
        "required": ["customer"],
    },
    annotations=types.ToolAnnotations(destructive_hint=True, idempotent_hint=False),
)


def open_orders(db: str) -> Ledger:
    """The ledger, in the shop's database (a SQLite file, or a PostgreSQL URL), with the orders table
    beside it; either is created or upgraded to `ORDERS`' latest version on start."""
    if db.startswith(("postgresql://", "postgres://")):
        return open_postgres_ledger(db, schema=(ORDERS,))
    return open_sqlite_ledger(db, schema=(ORDERS,))


def cancel_action(ledger: Ledger, ttl: float) -> ConfirmedAction:
    return ConfirmedAction(
        tool="cancel_order",
        ledger=ledger,
        answer=Answer.PICK_ONE,
        ttl_seconds=ttl,
        done_label="cancelled_order",
        nothing_done="no order was cancelled",
        pick_field="order_id",
        noun="order",
    )


def offer(ledger: Ledger, customer: str) -> Offer | types.CallToolResult:
    """Round 1: the customer's open orders, each with its row version as the fingerprint."""
    with ledger.snapshot() as db:
        rows = db.execute(
            "SELECT id, item, version FROM orders WHERE customer = ? AND status = 'open' ORDER BY id",
            (customer,),
        )
    if not rows:
        return Refusal("no_open_order", f"{customer} has no open order").result()
    found = [Candidate(str(i), item, str(version), f"order {i}") for i, item, version in rows]
    return Offer(
        pick_one_form(
            f"Cancel an order of {customer}?",
            found,
            pick_title="Order",
            field="order_id",
            confirm_title="Yes, cancel this order",
        ),
        candidates=found,
    )


def cancel(confirmed: Confirmed) -> Done:
    """Inside the claim's transaction: cancel the picked order if it is still the version shown."""
    (picked,) = confirmed.chosen
    done = confirmed.txn.execute(
        "UPDATE orders SET status = 'cancelled', version = version + 1 "
        "WHERE id = ? AND version = ? AND status = 'open' RETURNING id",
        (int(picked.id), int(picked.fingerprint)),
    )
    if not done:  # raising rolls the claim back: the user may confirm again after a fresh look
        raise Refusal("order_changed", f"order {picked.id} changed since it was shown; nothing was cancelled")
    return Done({"outcome": "cancelled_order", "orderId": picked.id}, f"order {picked.id} was cancelled")


def unchanged(outcome: str, until: str | None) -> Done:
    return Done(retriable({"outcome": outcome}, until))


def call_cancel(
    action: ConfirmedAction,
    principal: str,
    customer: str,
    request_state: str | None,
    input_responses: Mapping[str, Any] | None,
) -> Coroutine[Any, Any, ToolResult]:
    """The one call both servers make (the round's result, to await)."""
    return action.run(
        principal=principal,
        arguments={"customer": customer},
        request_state=request_state,
        input_responses=input_responses,
        offer=lambda _prior: offer(action.ledger, customer),
        effect=cancel,
        unchanged=unchanged,
    )


def request_state_security(action: ConfirmedAction, key_file: Path) -> RequestStateSecurity:
    """The sealing of `requestState`: its TTL is the action's (`sealing`), its key one per shop, kept
    in `key_file` (mode 0600, made on first use), so every process serving the same orders opens
    the others' states: a replay reaches the ledger, which refuses it. The SDK's default principal
    binding stays on (the caller's token, over authenticated HTTP)."""
    try:
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32))  # 64 characters: the SDK needs at least 32 bytes
    except FileExistsError:
        pass
    return sealing(action, keys=[key_file.read_text().strip()])


def parse_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--db", required=True, help="the shop's SQLite file, or a postgresql:// URL")
    parser.add_argument(
        "--key-file", type=Path, help="the sealing key, shared by every process (default: DB.key)"
    )
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT")
    parser.add_argument("--principal", default="clerk", help="who the (unauthenticated) caller is")
    parser.add_argument("--ttl", type=float, default=600.0, help="seconds a confirmation may be answered")
    args = parser.parse_args()
    if args.key_file is None:
        if "://" in args.db:
            parser.error("--key-file is required with a PostgreSQL --db (every process needs the same key)")
        args.key_file = Path(args.db).with_suffix(".key")
    return args
