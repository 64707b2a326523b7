"""Progress from a worker thread never waits on the client (tools.results.progress_sink).

`notes_trash_empty` purges inside the ledger's critical section and reports progress from there:
a client that reads its stream slowly must not hold that section, nor any worker thread.
"""

from __future__ import annotations

import threading

import anyio
import anyio.to_thread
import pytest

from notewarden.tools.results import progress_sink


@pytest.mark.anyio
async def test_a_stalled_client_holds_no_worker_and_gets_the_last_value() -> None:
    sent: list[tuple[float, float | None, str | None]] = []
    client_reads = anyio.Event()
    worker_done = threading.Event()

    async def report(done: float, total: float | None, message: str | None) -> None:
        await client_reads.wait()  # the client does not read its stream yet
        sent.append((done, total, message))

    async with progress_sink(report) as sink:
        assert sink is not None

        def purge() -> None:  # runs as a purge does: in a worker thread, under the ledger's lock
            for done in (100, 200, 200, 150, 300):
                sink(done, 300, f"{done} of 300")
            worker_done.set()

        with anyio.fail_after(5):
            await anyio.to_thread.run_sync(purge)
        assert worker_done.is_set() and sent == [], "the worker finished while the client read nothing"
        client_reads.set()
    assert sent[-1] == (300, 300, "300 of 300"), "the last value is sent before the result"
    assert [s[0] for s in sent] == sorted({s[0] for s in sent}), "strictly increasing"


@pytest.mark.anyio
async def test_without_a_progress_token_there_is_no_sink() -> None:
    async with progress_sink(None) as sink:
        assert sink is None


@pytest.mark.anyio
async def test_an_error_of_the_block_leaves_it_as_it_is() -> None:
    """Not wrapped in the relay's task group's ExceptionGroup: the registry maps it (a refusal of a
    purge whose trash changed, a bad requestState) as it would without a progress token."""

    async def report(done: float, total: float | None, message: str | None) -> None:
        pass

    with pytest.raises(LookupError, match="the trash changed"):
        async with progress_sink(report):
            raise LookupError("the trash changed")
