"""`notewarden.confirm`: exactly-once confirmed destructive tools for servers on the official MCP SDK.

A tool asks the user to confirm (a form delivered as `input_required`, 2026-07-28), and the
confirmed effect happens once: in the same database transaction as the claim of the
confirmation in a ledger (SQLite on one host, PostgreSQL for several instances), whatever the
client replays, however many processes serve it, wherever one of them crashes.

    action = ConfirmedAction(tool="cancel_order", ledger=open_sqlite_ledger(path), answer=Answer.PICK_ONE)
    mcp = MCPServer("shop", request_state_security=sealing(action, keys=[key]))

    @mcp.tool()
    async def cancel_order(customer: str, ctx: Context) -> CallToolResult | InputRequiredResult:
        return await action.run(
            principal=who_is_asking(), arguments={"customer": customer},
            request_state=ctx.request_state, input_responses=ctx.input_responses,
            offer=..., effect=..., unchanged=...,
        )

A complete server, every public name, the contract, the threat model and the version policy:
docs/confirm-library.md (its code runs in tests/examples/test_docs.py). Crash tests of your own
tool: `confirm.testing` and its pytest plugin `confirm.pytest_plugin`.

The path itself: `confirm.flow` (module docstring).

Rule 1 (version policy): the names in `__all__` (and those of the modules `testing` and
`pytest_plugin`) are the public API, versioned by `API_VERSION`
under semantic versioning: a minor version adds, only a major version removes or changes a
name, a signature, the outcome table or the wire shape of a result or error. Everything else
(the submodules' other names, the plaintext layout of the state, which is sealed and never read
by clients) is internal and may change in any release.

Rule 2 (stand-alone): this package imports the SDK, `notewarden.ledger`, `notewarden.schema`,
`notewarden.faults` and `notewarden.display` only (and pytest, in `pytest_plugin` alone); nothing
of notewarden's notes, scopes or tools.
"""

from __future__ import annotations

from pathlib import Path

from notewarden.confirm.flow import (
    Confirmed,
    ConfirmedAction,
    Done,
    Offer,
    Refusal,
    ToolResult,
    already_used,
    retriable,
    sealing,
)
from notewarden.confirm.forms import (
    OUTCOMES,
    Answer,
    Outcome,
    Verdict,
    VerdictKind,
    pick_one_form,
    pick_some_form,
    yes_no_form,
)
from notewarden.confirm.state import Candidate, ConfirmationState, InvalidState, Selection
from notewarden.ledger import Ledger, LedgerTxn, LedgerUnavailable, PriorUse
from notewarden.schema import SchemaComponent

__all__ = [
    "API_VERSION",
    "OUTCOMES",
    "Answer",
    "Candidate",
    "ConfirmationState",
    "Confirmed",
    "ConfirmedAction",
    "Done",
    "InvalidState",
    "Ledger",
    "LedgerTxn",
    "LedgerUnavailable",
    "Offer",
    "Outcome",
    "PriorUse",
    "Refusal",
    "SchemaComponent",
    "Selection",
    "ToolResult",
    "Verdict",
    "VerdictKind",
    "already_used",
    "open_postgres_ledger",
    "open_sqlite_ledger",
    "pick_one_form",
    "pick_some_form",
    "retriable",
    "sealing",
    "yes_no_form",
]

API_VERSION = "1.1.0"


def open_sqlite_ledger(
    path: str | Path, *, schema: tuple[SchemaComponent, ...] = (), durability: str = "normal"
) -> Ledger:
    """The ledger in a SQLite file (one host), created or upgraded with `schema`: the caller's own
    tables, so its effect writes them in the claim's transaction. `durability="full"` also
    survives power loss (one fsync per confirmation)."""
    from notewarden.ledger.sqlite import SqliteLedger

    if durability not in ("normal", "full"):
        raise ValueError(f"durability must be 'normal' or 'full', got {durability!r}")
    return SqliteLedger(
        Path(path), components=schema, durability="full" if durability == "full" else "normal"
    )


def open_postgres_ledger(dsn: str, *, schema: tuple[SchemaComponent, ...] = ()) -> Ledger:
    """The ledger in a PostgreSQL database (several instances; needs notewarden[postgres]), its
    schema and the caller's brought up to date first (shared databases are upgraded explicitly in
    notewarden itself; here the author's process does it on start)."""
    from notewarden.ledger.postgres import PostgresLedger

    ledger = PostgresLedger(dsn, components=schema, check_schema=False)
    ledger.upgrade()
    return ledger
