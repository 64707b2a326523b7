"""docs/confirm-library.md runs as written: every code block is a file a server author copies
(`shop.py`: a complete server; `test_shop.py`: its crash test), run here verbatim, the server as a
real process over stdio driven by the official SDK client (every message it wrote checked against
the 2026-07-28 schema), the test under pytest. The page's reference lists exactly
`notewarden.confirm.__all__`, and the testing modules' names.
"""

from __future__ import annotations

import os
import re
import secrets
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

import notewarden.confirm
import notewarden.confirm.pytest_plugin
import notewarden.confirm.testing
from notewarden.confirm import Answer, ConfirmedAction, open_sqlite_ledger, sealing
from tests.wire.test_stdio import check_recorded

pytestmark = pytest.mark.anyio
DOC = Path(__file__).resolve().parents[2] / "docs" / "confirm-library.md"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)


def blocks() -> dict[str, str]:
    """Every fenced block of the page, by the file name its first line gives (`# shop.py: …`)."""
    found: dict[str, str] = {}
    for language, code in BLOCK.findall(DOC.read_text()):
        assert language == "python", f"a {language or 'plain'} block that no test runs:\n{code}"
        name = re.match(r"# (\w+\.py):", code)
        assert name, f"a block without its file name on the first line:\n{code[:200]}"
        found[name[1]] = code
    return found


def section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def test_every_block_is_a_file_this_module_runs() -> None:
    assert sorted(blocks()) == ["shop.py", "test_shop.py"]


def test_the_reference_lists_exactly_the_public_names() -> None:
    """Each top-level entry of "Reference" opens with the names it documents: `A(...)`, `B`: …"""
    documented: list[str] = []
    for line in section("Reference").splitlines():
        head = re.match(r"\* ((?:`[^`]+`(?:, )?)+):", line)
        if head:
            documented += re.findall(r"`(\w+)", head[1])
    assert sorted(documented) == sorted(notewarden.confirm.__all__)
    testing = section("Testing your tool")
    for module in (notewarden.confirm.testing, notewarden.confirm.pytest_plugin):
        missing = [name for name in module.__all__ if f"`{name}" not in testing]
        assert not missing, (module.__name__, missing)


@pytest.fixture(scope="module")
def author(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty directory holding the page's files, nothing else."""
    root = tmp_path_factory.mktemp("author")
    for name, code in blocks().items():
        (root / name).write_text(code)
    return root


@asynccontextmanager
async def shop_server(root: Path, python: str = sys.executable) -> AsyncIterator[Client]:
    """`python shop.py` with the page's environment, its pipes recorded and schema-checked; `python`:
    another environment's (tests/packaging/test_library.py: the library alone)."""
    sent, received = root / "stdin.jsonl", root / "stdout.jsonl"
    line = f"cd {root} && tee -a {sent} | {python} shop.py | tee -a {received}"
    env = {**os.environ, "SHOP_KEY": secrets.token_hex(32), "SHOP_DB": str(root / "shop.sqlite3")}
    params = StdioServerParameters(command="/bin/sh", args=["-c", line], env=env)
    async with Client(params, mode="auto") as session:
        yield session
    check_recorded(sent, received)


def outcome(result: types.CallToolResult | types.InputRequiredResult) -> str:
    assert isinstance(result, types.CallToolResult), result
    assert result.structured_content is not None
    if result.is_error:
        return str(result.structured_content["error"]["code"])
    return str(result.structured_content["outcome"])


async def test_the_complete_server_runs_as_written(author: Path) -> None:
    """Both shapes over the wire on the page's own server: pick one (accept, replay), yes/no
    (decline, cancel then answer again, missing content, accept: `chosen` is the one order)."""
    async with shop_server(author) as session:
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert tools == {"cancel_order", "cancel_order_by_id"}
        with sqlite3.connect(author / "shop.sqlite3") as conn:
            conn.execute(
                "INSERT INTO orders (customer, item) VALUES ('ada', 'kettle'), ('ada', 'teapot'), ('bob', 'mug')"
            )

        async def call(tool: str, args: dict[str, Any], state: str | None = None, reply: Any = None) -> Any:
            responses = None if state is None else ({} if reply is None else {"confirm": reply})
            return await session.session.call_tool(
                tool, args, input_responses=responses, request_state=state, allow_input_required=True
            )

        pick = await call("cancel_order", {"customer": "ada"})
        assert isinstance(pick, types.InputRequiredResult)
        form = pick.input_requests["confirm"]
        assert isinstance(form, types.ElicitRequest)
        choices = form.params.requested_schema["properties"]["order_id"]["oneOf"]
        assert [c["const"] for c in choices] == ["1", "2"]
        yes = types.ElicitResult(action="accept", content={"order_id": "1", "confirm": True})
        done = await call("cancel_order", {"customer": "ada"}, pick.request_state, yes)
        assert outcome(done) == "cancelled_order" and done.structured_content["orderId"] == "1"
        replay = await call("cancel_order", {"customer": "ada"}, pick.request_state, yes)
        assert outcome(replay) == "confirmation_already_used"
        assert replay.structured_content["error"]["previous"] == done.structured_content

        by_id = {"order_id": 2}
        declined = await call("cancel_order_by_id", by_id)
        assert isinstance(declined, types.InputRequiredResult)
        asked = declined.input_requests["confirm"]
        assert isinstance(asked, types.ElicitRequest)
        assert list(asked.params.requested_schema["properties"]) == ["confirm"]
        assert "teapot — 2" in asked.params.message
        no = types.ElicitResult(action="decline")
        assert outcome(await call("cancel_order_by_id", by_id, declined.request_state, no)) == "declined"

        asked_again = await call("cancel_order_by_id", by_id)
        cancel = types.ElicitResult(action="cancel")
        later = await call("cancel_order_by_id", by_id, asked_again.request_state, cancel)
        assert outcome(later) == "cancelled" and "retriableUntil" in later.structured_content
        empty = types.ElicitResult(action="accept")
        assert outcome(await call("cancel_order_by_id", by_id, asked_again.request_state, empty)) == (
            "invalid_answer"
        )
        confirm = types.ElicitResult(action="accept", content={"confirm": True})
        cancelled = await call("cancel_order_by_id", by_id, asked_again.request_state, confirm)
        assert outcome(cancelled) == "cancelled_order" and cancelled.structured_content["orderId"] == "2"
        gone = await call("cancel_order_by_id", {"order_id": 1})
        assert outcome(gone) == "no_open_order"
    with sqlite3.connect(author / "shop.sqlite3") as conn:
        statuses = conn.execute("SELECT id, status FROM orders ORDER BY id").fetchall()
        claims = conn.execute("SELECT outcome FROM confirmations ORDER BY outcome").fetchall()
    assert statuses == [(1, "cancelled"), (2, "cancelled"), (3, "open")]
    assert claims == [("cancelled_order",), ("cancelled_order",), ("declined",)]


def test_the_crash_test_passes_as_written(author: Path) -> None:
    """The page's test_shop.py, run by pytest beside shop.py with the library's plugin: SIGKILL at
    each of the three points, then the same confirmation on a new process."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "notewarden.confirm.pytest_plugin", "test_shop.py"],
        cwd=author,
        capture_output=True,
        text=True,
        timeout=240,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
            "PYTHONDONTWRITEBYTECODE": "1",
        },
    )
    assert run.returncode == 0 and "3 passed" in run.stdout, run.stdout + run.stderr


def test_one_ttl_setting(tmp_path: Path) -> None:
    """`sealing` takes the SDK's TTL from the actions, and refuses actions that disagree."""
    ledger = open_sqlite_ledger(tmp_path / "ledger.sqlite3")
    short = ConfirmedAction(tool="a", ledger=ledger, answer=Answer.YES_NO, ttl_seconds=60)
    assert sealing(short, keys=[secrets.token_hex(32)]).ttl == 60
    long = ConfirmedAction(tool="b", ledger=ledger, answer=Answer.YES_NO, ttl_seconds=600)
    with pytest.raises(ValueError, match=r"a=60s, b=600s; give them the same ttl_seconds"):
        sealing(short, long, keys=[secrets.token_hex(32)])
    with pytest.raises(ValueError, match="at least 32 bytes"):
        sealing(short, keys=["short"])
    with pytest.raises(ValueError, match="ttl_seconds must be a positive"):
        ConfirmedAction(tool="c", ledger=ledger, answer=Answer.YES_NO, ttl_seconds=0)
    ledger.close()
