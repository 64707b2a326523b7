"""Several stateless HTTP instances on one PostgreSQL and one sealing key.

Round 1 on A, the retry on B completes, a replay to C is rejected: the only state that
matters across rounds is the sealed `requestState` (any instance holding the key opens it)
and the ledger row (in PostgreSQL). With notes in PostgreSQL each instance has its own state
directory, holding no ledger and no notes.

Key rotation (docs/deployment.md): the first key in NOTEWARDEN_SEALING_KEYS seals, every key
unseals. An instance already rolled to "new,old" completes a confirmation sealed by an
instance still on "old"; the reverse fails until every instance knows the new key, which is
why the new key is first added *second* everywhere, and only then moved first.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from notewarden.sealing import key_id
from tests.pg import PgDatabase
from tests.race.harness import StorageDeployment, deployment
from tests.race.senders import classify
from tests.wire.publishing import RecordingTarget, visit_connect_page

NOTE = "reports/shared.md"


def log_events(d: StorageDeployment, event: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in d.logs().splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("event") == event]


BODY = "# Shared report\n\nOne team, three instances.\n"


@pytest.mark.parametrize("backend", ["postgres", "files+postgres"])
def test_round1_on_a_retry_on_b_replay_on_c(tmp_path: Path, pg: PgDatabase, backend: str) -> None:
    with deployment(tmp_path, backend, pg.name) as d:
        d.add_note(NOTE, BODY)
        a, b, c = (d.client(d.start(name)) for name in "abc")
        first = d.round1(a, "shared report")
        assert first.options == [NOTE]

        done = d.round2(b, first, NOTE)
        assert classify(done, NOTE) == "deleted"
        replay = d.round2(c, first, NOTE)  # e.g. the reply to b was lost and the client sent it again
        assert classify(replay, NOTE) == "replay"
        assert replay["content"][0]["text"].startswith(
            f"already done: “Shared report” ({NOTE}) was moved to the trash of {d.workspace_uri}."
        )
        assert replay["structuredContent"]["error"]["previous"] == done["structuredContent"]
        assert classify(d.round2(a, first, NOTE), NOTE) == "replay"
        assert d.trash_copies(NOTE) == 1 and d.trash_rows(NOTE) == 1 and d.claims() == 1
        assert d.records("notes_delete") == 1, "one commit, one record, whichever instance made it"
        local = {p.name.split(".sqlite3")[0] for i in "abc" for p in d.state_dir(i).iterdir()}
        assert "notewarden" not in local, "no local ledger: confirmations live in PostgreSQL only"
        if backend == "postgres":
            assert local == set(), f"nothing kept per instance, not even notes_publish's links: {local}"
        else:  # one database, one ledger: every instance owns the folder's trash
            rules = {(line["rule"], line["owner_ledger"]) for line in log_events(d, "trash_owner")}
            assert rules == {("owner", d.trash_owner()["ledger"])}
            assert d.trash_owner()["location"] == f"postgres@127.0.0.1:5432/{d.database}"


def test_key_rotation_rolls_out_new_key_second_then_first(tmp_path: Path, pg: PgDatabase) -> None:
    with deployment(tmp_path, "postgres", pg.name) as d:
        d.add_note(NOTE, BODY)
        d.add_note("reports/other.md", "# Other report\n")
        old, new = d.keys, secrets.token_hex(32)
        on_old = d.client(d.start("a"))
        on_both = d.client(d.start("b", NOTEWARDEN_SEALING_KEYS=f"{new},{old}"))

        sealed_with_new = d.round1(on_both, "other report")
        refused = on_old.call(
            "notes_delete", sealed_with_new.arguments, **sealed_with_new.retry_params("reports/other.md")
        )
        assert refused.error["code"] == -32602, "an instance without the new key cannot open its states"

        sealed_with_old = d.round1(on_old, "shared report")
        assert classify(d.round2(on_both, sealed_with_old, NOTE), NOTE) == "deleted"

        old_id, new_id = key_id(bytes.fromhex(old)), key_id(bytes.fromhex(new))
        assert {line["key_ids"] for line in log_events(d, "sealing_keys")} == {old_id, f"{new_id},{old_id}"}
        [unknown] = log_events(d, "unknown_sealing_key")
        assert (unknown["token_key_id"], unknown["key_ids"]) == (new_id, old_id), "the log says which key"
        assert old not in d.logs() and new not in d.logs(), "ids only, never a key"


def test_an_instance_with_a_locally_created_key_is_named_and_warned_about(
    tmp_path: Path, pg: PgDatabase
) -> None:
    with deployment(tmp_path, "postgres", pg.name) as d:
        d.add_note(NOTE, BODY)
        shared = d.client(d.start("a"))
        local = d.client(d.start("b", NOTEWARDEN_SEALING_KEYS=""))  # falls back to its state dir's key file
        sealed_locally = d.round1(local, "shared report")
        refused = shared.call("notes_delete", sealed_locally.arguments, **sealed_locally.retry_params(NOTE))
        assert refused.error["message"] == "Invalid or expired requestState"  # the SDK's words on the wire

        key_file = d.state_dir("b") / "sealing-keys"
        local_id = key_id(bytes.fromhex(key_file.read_text().strip()))
        [warning] = [e for e in log_events(d, "sealing_keys") if e["level"] == "warning"]
        assert warning["source"] == f"file {key_file}" and warning["key_ids"] == local_id
        assert "NOTEWARDEN_SEALING_KEYS" in warning["msg"]
        [unknown] = log_events(d, "unknown_sealing_key")
        assert unknown["token_key_id"] == local_id


def test_a_publish_link_completed_on_one_instance_is_seen_by_another(tmp_path: Path, pg: PgDatabase) -> None:
    """notes_publish's pending links and credentials live in PostgreSQL (publish.connections)."""
    target = RecordingTarget().start()
    try:
        with deployment(tmp_path, "postgres", pg.name) as d:
            d.extra_config = f'[[publish.target]]\nid = "blog"\ntitle = "Team blog"\nurl = "{target.url}"\nauth = "bearer"\n'
            d.add_note(NOTE, BODY)
            a, b = d.start("a"), d.start("b")
            on_a = d.client(a)
            arguments = {"workspaceUri": d.workspace_uri, "noteId": NOTE, "target": "blog"}
            first = on_a.call("notes_publish", arguments, capabilities={"elicitation": {"url": {}}}).result
            link = first["inputRequests"]["publish_connect"]["params"]["url"]
            assert link.startswith(a.url.removesuffix("/mcp"))
            on_b_link = link.replace(a.url.removesuffix("/mcp"), b.url.removesuffix("/mcp"))
            visit = visit_connect_page(on_b_link, token=d.token, credential="blog-credential-" + "y" * 12)
            assert visit.completion == "completed", visit.texts
            done = on_a.call(
                "notes_publish",
                arguments,
                capabilities={"elicitation": {"url": {}}},
                inputResponses={"publish_connect": {"action": "accept"}},
                requestState=first["requestState"],
            ).result
            assert done["structuredContent"]["outcome"] == "published", done
            assert [r.body["noteId"] for r in target.received] == [NOTE]
            assert target.received[0].headers["authorization"] == "Bearer blog-credential-" + "y" * 12
            again = (
                d.client(b).call("notes_publish", arguments, capabilities={"elicitation": {"url": {}}}).result
            )
            assert again["structuredContent"]["outcome"] == "published", (
                "B holds the credential A's link stored"
            )
            stored = d.sql("SELECT count(*) FROM publish_credentials WHERE principal = ?", (d.principal,))
            assert stored == [(1,)]
    finally:
        target.stop()
