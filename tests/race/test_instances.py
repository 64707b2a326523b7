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

import secrets
from pathlib import Path

import pytest

from tests.pg import PgDatabase
from tests.race.harness import deployment
from tests.race.senders import classify
from tests.wire.publishing import RecordingTarget, visit_connect_page

NOTE = "reports/shared.md"
BODY = "# Shared report\n\nOne team, three instances.\n"


@pytest.mark.parametrize("backend", ["postgres", "files+postgres"])
def test_round1_on_a_retry_on_b_replay_on_c(tmp_path: Path, pg: PgDatabase, backend: str) -> None:
    with deployment(tmp_path, backend, pg.name) as d:
        d.add_note(NOTE, BODY)
        a, b, c = (d.client(d.start(name)) for name in "abc")
        first = d.round1(a, "shared report")
        assert first.options == [NOTE]

        assert classify(d.round2(b, first, NOTE), NOTE) == "deleted"
        replay = d.round2(c, first, NOTE)
        assert classify(replay, NOTE) == "replay"
        assert "already used (deleted)" in replay["content"][0]["text"]
        assert classify(d.round2(a, first, NOTE), NOTE) == "replay"
        assert d.trash_copies(NOTE) == 1 and d.trash_rows(NOTE) == 1 and d.claims() == 1
        local = {p.name.split(".sqlite3")[0] for i in "abc" for p in d.state_dir(i).iterdir()}
        assert "notewarden" not in local, "no local ledger: confirmations live in PostgreSQL only"
        if backend == "postgres":
            assert local == set(), f"nothing kept per instance, not even notes_publish's links: {local}"


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


def test_a_publish_link_completed_on_one_instance_is_seen_by_another(tmp_path: Path, pg: PgDatabase) -> None:
    """notes_publish's pending links and credentials live in PostgreSQL (publish.ledger_connections)."""
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
