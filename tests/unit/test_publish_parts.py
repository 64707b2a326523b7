"""The publish parts without a network: config rules, sealing at rest, the connection record."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from notewarden.config import ConfigError, parse_config
from notewarden.ledger.sqlite import SqliteLedger
from notewarden.publish.config import parse_publish
from notewarden.publish.connections import (
    PUBLISH_SCHEMA,
    Completion,
    Connections,
    ConnectionStatus,
    import_legacy_file,
)
from notewarden.publish.vault import credential_binding, credential_sealer
from notewarden.tools.notes_publish import ConnectVerdict, judge_connect

KEY_A, KEY_B = b"a" * 32, b"b" * 32


def target(**overrides: object) -> dict[str, object]:
    return {"id": "blog", "url": "https://blog.example/api", "auth": "bearer", **overrides}


@pytest.mark.parametrize(
    ("publish", "message"),
    [
        ({"target": [target(url="http://blog.example/api")]}, "loopback"),
        ({"target": [target(url="https://u:p@blog.example/api")]}, "user info"),
        ({"target": [target(auth="basic")]}, "'bearer' or 'header:"),
        ({"target": [target(), target()]}, "defined twice"),
        ({"target": [target(extra=1)]}, "unknown key"),
        ({"page_url": "https://notes.example/sub"}, "origin"),
        ({"connect_ttl_seconds": 0}, "between 1 and 86400"),
    ],
)
def test_config_errors_name_the_key_and_the_rule(publish: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config({"state_dir": "/tmp/x", "publish": publish})


def test_header_auth_and_loopback_http() -> None:
    settings = parse_publish({"target": [target(url="http://127.0.0.1:9/x", auth="header:X-Api-Key")]})
    assert settings.targets["blog"].auth_headers("k") == {"X-Api-Key": "k"}
    assert settings.page_base("127.0.0.1", 8765) == "http://127.0.0.1:8765"


def test_sealed_credentials_open_only_for_their_binding_and_survive_rotation() -> None:
    sealed = credential_sealer([KEY_A]).seal(b"secret", credential_binding("alice", "blog"))
    assert b"secret" not in sealed
    rotated = credential_sealer([KEY_B, KEY_A])
    assert rotated.open(sealed, credential_binding("alice", "blog")) == b"secret"
    assert rotated.open(sealed, credential_binding("bob", "blog")) is None
    assert credential_sealer([KEY_B]).open(sealed, credential_binding("alice", "blog")) is None


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[SqliteLedger]:
    ledger = SqliteLedger(tmp_path / "notewarden.sqlite3", components=[PUBLISH_SCHEMA])
    yield ledger
    ledger.close()


def test_a_connection_completes_once_for_its_owner(tmp_path: Path, ledger: SqliteLedger) -> None:
    store = Connections(ledger, [KEY_A])
    pending = store.start("alice", "blog", ttl=60)
    assert store.complete(pending.connection_id, "bob", "x") is Completion.NOT_FOUND
    assert store.complete(pending.connection_id, "alice", "first") is Completion.COMPLETED
    assert store.complete(pending.connection_id, "alice", "second") is Completion.ALREADY_DONE
    assert store.credential("alice", "blog") == "first"
    assert store.credential("bob", "blog") is None
    raw = (
        sqlite3.connect(tmp_path / "notewarden.sqlite3")
        .execute("SELECT sealed FROM publish_credentials")
        .fetchone()
    )
    assert b"first" not in bytes(raw[0])
    expired = store.start("alice", "blog", ttl=0.01)
    time.sleep(0.02)
    assert store.complete(expired.connection_id, "alice", "late") is Completion.EXPIRED
    store.close()


def test_accept_is_judged_against_the_record(ledger: SqliteLedger) -> None:
    store = Connections(ledger, [KEY_A])
    pending = store.start("alice", "blog", ttl=60)
    assert judge_connect({"action": "accept"}, store.get(pending.connection_id)) is ConnectVerdict.WAITING
    store.complete(pending.connection_id, "alice", "k")
    assert judge_connect({"action": "accept"}, store.get(pending.connection_id)) is ConnectVerdict.CONNECTED
    other = store.start("alice", "blog", ttl=60)
    store.abandon(other.connection_id, "alice")
    record = store.get(other.connection_id)
    assert record is not None and record.status is ConnectionStatus.ABANDONED
    # abandoned = "Don't connect" on the page (or an earlier decline): the retry declines
    assert judge_connect({"action": "accept"}, record) is ConnectVerdict.DECLINED
    assert judge_connect({"action": "accept"}, None) is ConnectVerdict.EXPIRED
    assert judge_connect(None, record) is ConnectVerdict.MISSING
    assert judge_connect({"action": "decline"}, None) is ConnectVerdict.DECLINED
    assert judge_connect({"action": "maybe"}, record) is ConnectVerdict.INVALID
    store.close()


def test_an_earlier_versions_file_is_moved_into_the_ledger_once(tmp_path: Path, ledger: SqliteLedger) -> None:
    """Rule 6: the record of `publish.sqlite3` (the only file before) is copied, then the file renamed."""
    legacy = tmp_path / "publish.sqlite3"
    with closing(sqlite3.connect(legacy, isolation_level=None)) as old:
        old.executescript("".join(PUBLISH_SCHEMA.sqlite))
        sealed = credential_sealer([KEY_A]).seal(b"kept", credential_binding("alice", "blog"))
        old.execute("INSERT INTO publish_credentials VALUES ('alice', 'blog', ?, 'c1', 1.0)", (sealed,))
        old.execute(
            "INSERT INTO publish_connections VALUES ('c1', 'alice', 'blog', 1.0, 9e9, 'done', 2.0, 'n.md', 'N', "
            "'notes_publish', 'cli')"
        )
    store = Connections(ledger, [KEY_A])
    assert store.credential("alice", "blog") is None
    assert import_legacy_file(ledger, legacy) == 2
    assert store.credential("alice", "blog") == "kept"
    record = store.get("c1")
    assert record is not None and record.status is ConnectionStatus.DONE and record.asked_by.note_title == "N"
    assert not legacy.exists() and (tmp_path / "publish.sqlite3.imported").exists()
    assert import_legacy_file(ledger, legacy) == 0, "once"
