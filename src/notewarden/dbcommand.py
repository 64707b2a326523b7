"""`notewarden db upgrade|status --config FILE`: the explicit schema step and a look at growth.

`upgrade` is idempotent and safe to run while servers are up (it takes a lock, and every
step is one transaction). `status` exits 0 when the schema is current, 3 when it is behind.
"""

from __future__ import annotations

from notewarden.config import Config
from notewarden.storage import schema_status, upgrade_schema

__all__ = ["run_db_command"]


def run_db_command(action: str, config: Config) -> int:
    if action == "upgrade":
        applied = upgrade_schema(config)
        for component, steps in applied.items():
            print(f"{component}: {'applied ' + str(steps) + ' step(s)' if steps else 'already current'}")
        return 0
    try:
        current, lines = schema_status(config)
    except FileNotFoundError as exc:
        print(f"database: {exc}")
        return 3
    width = max(len(label) for label, _ in lines)
    for label, value in lines:
        print(f"{label.ljust(width)}  {value}")
    return 0 if current else 3
