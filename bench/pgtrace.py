"""libpq's protocol trace of a psycopg connection, read back: what a client sent PostgreSQL.

Used by `bench.inproc --trace` and tests/storage/test_sql_round_trips.py. A `Sync` (the end of an
extended-protocol statement) and a simple `Query` are the messages the client then waits on: their
count is the number of round trips; `Bind` and `Query` count the statements.
"""

from __future__ import annotations

from collections import Counter
from typing import IO, Any

__all__ = ["ROUND_TRIP", "STATEMENT", "sent", "trace"]

ROUND_TRIP = ("Sync", "Query")
STATEMENT = ("Bind", "Query")


def trace(conn: Any, file: IO[str]) -> None:
    """Trace `conn`'s protocol messages into `file`, without timestamps (`untrace` flushes)."""
    from psycopg.pq import Trace  # psycopg is the `postgres` extra: only a PostgreSQL run needs it

    conn.pgconn.trace(file.fileno())
    conn.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS | Trace.REGRESS_MODE)


def sent(text: str) -> Counter[str]:
    """The frontend (client-sent) messages of a trace, by type."""
    found: Counter[str] = Counter()
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) > 2 and fields[0] == "F":
            found[fields[2].split()[0]] += 1
    return found
