"""Fixtures of the wire tests: clients of the one `http_server` a module runs (a module that needs
another configuration overrides `http_server`), and the recording publish target."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import ALICE_TOKEN, BOB_TOKEN, Deployment, HttpServer, start_http_server
from tests.wire.publishing import RecordingTarget, add_publish_config
from tests.wire.rawhttp import RawMcp


@pytest.fixture
def alice(http_server: HttpServer) -> Iterator[RawMcp]:
    client = RawMcp(http_server.url, ALICE_TOKEN)
    yield client
    client.close()


@pytest.fixture
def bob(http_server: HttpServer) -> Iterator[RawMcp]:
    client = RawMcp(http_server.url, BOB_TOKEN)
    yield client
    client.close()


@pytest.fixture
def target() -> Iterator[RecordingTarget]:
    t = RecordingTarget().start()
    yield t
    t.stop()


@pytest.fixture
def publishing_server(deployment: Deployment, target: RecordingTarget) -> Iterator[HttpServer]:
    """A server whose config publishes to `target` (a module's `target` may stall it)."""
    add_publish_config(deployment, target)
    s = start_http_server(deployment.config, deployment.root / "server.log")
    yield s
    s.stop()
