"""pytest fixtures for crash tests of a `notewarden.confirm` server (`notewarden.confirm.testing`).

Enable them in your `conftest.py` with `pytest_plugins = ["notewarden.confirm.pytest_plugin"]`:

    confirm_pause   a factory: `confirm_pause("after_claim")` is a `Pause` whose file is in tmp_path
    confirm_arm     `testing.arm` in this process, every point undone when the test ends
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from notewarden.confirm.testing import Pause, arm, crash

__all__ = ["confirm_arm", "confirm_pause"]


@pytest.fixture
def confirm_pause(tmp_path: Path) -> Iterator[Callable[[str], Pause]]:
    made: list[Pause] = []

    def pause(point: str) -> Pause:
        held = Pause(point, tmp_path / f"confirm-pause-{point}-{len(made)}")
        made.append(held)
        return held

    yield pause
    for held in made:  # a process still held must not outlive the test
        held.release()


@pytest.fixture
def confirm_arm() -> Iterator[Callable[..., None]]:
    with ExitStack() as armed:

        def arm_point(point: str, hook: Callable[[str], None] = crash) -> None:
            armed.enter_context(arm(point, hook))

        yield arm_point
