"""Attachments (issue 27) through the official SDK client on both transports, against real server
processes on a real folder: `resources/read` of a PNG, a JPEG, a PDF, an SVG, a CSV, files whose
extension lies, symlinked attachments (pointing inside and outside), one over the size limit, and
paths out of the workspace (`../`, `%2e%2e`, another principal's workspace, hidden, not an
attachment); `notes_links` telling attachment links from note links and naming the missing ones;
`notes_read {includeAttachments}` returning images as image content within its budget and naming
the rest; a move and a delete leaving attachments alone; folder rights; the SQL store. Every
message is checked against the schema and every result against its tool's outputSchema
(`tests/wire/sdkclients.py`)."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from notewarden.notes.attachments import ATTACHMENT_MAX_BYTES
from notewarden.tools.notes_read import IMAGES_MAX
from notewarden.tools.resources import TYPE_MISMATCH_META
from tests.conftest import Deployment
from tests.unit.test_attachments import JPEG, PDF, SVG, png
from tests.wire.sdkclients import TRANSPORTS, call, error_code, sdk_client
from tests.wire.test_note_tools import accept_all

pytestmark = [pytest.mark.anyio, pytest.mark.resolves_files]

HOME = """# Home

![[diagram.png]] and ![photo](files/photo.jpg)
The spec: ![[spec.pdf#page=2]] and [the data](files/a.csv).
Named wrong: ![[liar.jpg]] ![[cat.png]] ![[drawing.svg]]
Links: ![[link-in.png]] ![[link-out.png]] ![[huge.png]] ![[missing.png]] [[Other]]
Again: ![[diagram.png]]
"""
GALLERY = "# Gallery\n\n" + "".join(f"![[g{i}.png]]\n" for i in range(IMAGES_MAX + 2))
TRIP = "# Trip\n\n![[diagram.png]] ![](./files/photo.jpg) [[Other]]\n"
SCRIPT = b"#!/bin/sh\necho not an image\n"
CSV = b"a,b\n1,2\n"


def write_vault(notes: Path, outside: Path) -> dict[str, bytes]:
    files = {
        "files/diagram.png": png(2, 2),
        "files/photo.jpg": JPEG,
        "files/spec.pdf": PDF,
        "files/a.csv": CSV,
        "files/liar.jpg": png(3, 1),
        "files/cat.png": SCRIPT,
        "files/drawing.svg": SVG,
        "files/notes.txt": b"not an attachment\n",
        ".obsidian/icon.png": png(),
        **{f"gallery/g{i}.png": png(i + 1, 1) for i in range(IMAGES_MAX + 2)},
    }
    for path, data in files.items():
        (notes / path).parent.mkdir(parents=True, exist_ok=True)
        (notes / path).write_bytes(data)
    (notes / "Home.md").write_text(HOME)
    (notes / "Other.md").write_text("# Other\n")
    (notes / "gallery" / "Gallery.md").write_text(GALLERY)
    (notes / "Trip.md").write_text(TRIP)
    (notes / "Travel.md").write_text(TRIP)
    huge = notes / "files" / "huge.png"
    huge.write_bytes(png())
    os.truncate(huge, ATTACHMENT_MAX_BYTES + 1)  # sparse: over the limit without writing 8 MiB
    outside.write_bytes(png(5, 5))
    os.symlink(outside, notes / "files" / "link-out.png")
    os.symlink("diagram.png", notes / "files" / "link-in.png")
    return files


async def read_error(client: Any, uri: str) -> str:
    with pytest.raises(MCPError) as caught:
        await client.read_resource(uri)
    assert caught.value.code == -32602, uri
    message = str(caught.value.message)
    assert "bob" not in message, message  # neither another principal's grants nor their files
    return message


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_attachments_are_typed_by_content_limited_and_contained(
    transport: str, deployment: Deployment
) -> None:
    files = write_vault(deployment.notes, deployment.root / "outside.png")
    (deployment.private / "secret.png").write_bytes(png(7, 7))
    ws = deployment.notes_uri
    async with sdk_client(transport, deployment, elicitation_callback=accept_all()) as client:
        # resources/read: a blob typed by its content
        for path, mime in [
            ("files/diagram.png", "image/png"),
            ("files/photo.jpg", "image/jpeg"),
            ("files/spec.pdf", "application/pdf"),
            ("files/liar.jpg", "image/png"),  # a PNG named .jpg: its real type, and why
            ("files/cat.png", "application/octet-stream"),  # a script named .png: never image/png
        ]:
            read = await client.read_resource(f"{ws}/{path}")
            (contents,) = read.contents
            assert isinstance(contents, types.BlobResourceContents), path
            assert (contents.mime_type, base64.b64decode(contents.blob)) == (mime, files[path]), path
            assert contents.uri == f"{ws}/{path}" and read.cache_scope == "private"
            lied = (contents.meta or {}).get(TYPE_MISMATCH_META)
            assert (lied is not None) == (path in ("files/liar.jpg", "files/cat.png")), path
        liar = (await client.read_resource(f"{ws}/files/liar.jpg")).contents[0]
        assert (liar.meta or {})[TYPE_MISMATCH_META] == (
            "files/liar.jpg is named like image/jpeg but its content is image/png; served as image/png"
        )
        for path, mime, data in [
            ("files/drawing.svg", "image/svg+xml", SVG),
            ("files/a.csv", "text/csv", CSV),
        ]:
            (text,) = (await client.read_resource(f"{ws}/{path}")).contents
            assert isinstance(text, types.TextResourceContents), path
            assert (text.mime_type, text.text) == (mime, data.decode())

        # what is refused, and nothing escapes
        assert "symbolic link" in await read_error(client, f"{ws}/files/link-in.png")
        assert "symbolic link" in await read_error(client, f"{ws}/files/link-out.png")
        too_big = await read_error(client, f"{ws}/files/huge.png")
        assert f"is {ATTACHMENT_MAX_BYTES + 1} bytes; at most {ATTACHMENT_MAX_BYTES} may be read" in too_big
        for bad in (
            f"{ws}/../private/secret.png",
            f"{ws}/%2e%2e/private/secret.png",
            f"{ws}/files/%2e%2e/%2e%2e/private/secret.png",
            f"{deployment.private_uri}/secret.png",
            f"{ws}/files/missing.png",
            f"{ws}/files",
        ):
            await read_error(client, bad)
        assert "hidden" in await read_error(client, f"{ws}/.obsidian/icon.png")
        assert "not a note (.md) nor an attachment" in await read_error(client, f"{ws}/files/notes.txt")

        # notes_links: attachment links apart from note links, the missing ones named
        found = (
            await call(client, "notes_links", {"workspaceUri": ws, "noteId": "Home.md"})
        ).structured_content
        shown = {(link["written"], link["line"]): link for link in found["links"] + found["embeds"]}
        kinds = {w: (link["kind"], link["target"]) for (w, _), link in shown.items()}
        assert kinds == {
            "![[diagram.png]]": ("attachment", "files/diagram.png"),
            "![photo](files/photo.jpg)": ("attachment", "files/photo.jpg"),
            "![[spec.pdf#page=2]]": ("attachment", "files/spec.pdf"),
            "[the data](files/a.csv)": ("attachment", "files/a.csv"),
            "![[liar.jpg]]": ("attachment", "files/liar.jpg"),
            "![[cat.png]]": ("attachment", "files/cat.png"),
            "![[drawing.svg]]": ("attachment", "files/drawing.svg"),
            "![[link-in.png]]": ("attachment", None),  # a symlink is never an attachment
            "![[link-out.png]]": ("attachment", None),
            "![[huge.png]]": ("attachment", "files/huge.png"),  # present, only too large to read
            "![[missing.png]]": ("attachment", None),
            "[[Other]]": ("note", "Other.md"),
        }
        assert shown[("![[diagram.png]]", 3)]["targetUri"] == f"{ws}/files/diagram.png"
        assert shown[("![[spec.pdf#page=2]]", 4)]["anchor"] == "page=2"
        assert [(m["path"], m["line"], m["embed"]) for m in found["missingAttachments"]] == [
            ("link-in.png", 6, True),
            ("link-out.png", 6, True),
            ("missing.png", 6, True),
        ]
        assert "attachmentsUnavailable" not in found

        # notes_health: the missing embeds with their line, then a file nothing links to, added behind
        # the server's back (the index follows it), and a folder that narrows the report
        health = {"workspaceUri": ws, "kinds": ["missing_attachment_embed", "unlinked_attachment"]}
        report = (await call(client, "notes_health", health)).structured_content["items"]
        assert [(i["kind"], i["id"], i.get("line"), i.get("written")) for i in report] == [
            ("missing_attachment_embed", "Home.md", 6, w)
            for w in ("![[link-in.png]]", "![[link-out.png]]", "![[missing.png]]")
        ]
        (deployment.notes / "files" / "extra.png").write_bytes(png())
        report = (await call(client, "notes_health", {**health, "folder": "files"})).structured_content[
            "items"
        ]
        assert [(i["kind"], i["id"], i["title"], i["folder"], i["uri"]) for i in report] == [
            ("unlinked_attachment", "files/extra.png", "extra.png", "files", f"{ws}/files/extra.png")
        ]
        assert "notes_edit" in report[0]["fix"] and "![[extra.png]]" in report[0]["fix"]
        (deployment.notes / "files" / "extra.png").unlink()
        assert (await call(client, "notes_health", {**health, "folder": "files"})).structured_content[
            "items"
        ] == []

        # notes_read includeAttachments: images as image content, the rest named with why
        read = await call(
            client, "notes_read", {"workspaceUri": ws, "noteId": "Home.md", "includeAttachments": True}
        )
        attached = read.structured_content["attachments"]
        assert [(i["path"], i["mimeType"], i["line"]) for i in attached["included"]] == [
            ("files/diagram.png", "image/png", 3),
            ("files/photo.jpg", "image/jpeg", 3),
            ("files/liar.jpg", "image/png", 5),
        ]
        assert "typeMismatch" in attached["included"][2]
        images = [b for b in read.content if isinstance(b, types.ImageContent)]
        assert [(b.mime_type, base64.b64decode(b.data)) for b in images] == [
            ("image/png", files["files/diagram.png"]),
            ("image/jpeg", JPEG),
            ("image/png", files["files/liar.jpg"]),
        ]
        assert isinstance(read.content[0], types.TextContent)
        assert [(o["written"], o["reason"]) for o in attached["leftOut"]] == [
            ("![[spec.pdf#page=2]]", "not_an_image"),
            ("![[cat.png]]", "not_an_image"),
            ("![[drawing.svg]]", "svg_as_text"),
            ("![[link-in.png]]", "missing"),
            ("![[link-out.png]]", "missing"),
            ("![[huge.png]]", "too_large"),
            ("![[missing.png]]", "missing"),
        ]
        why = {o["written"]: o["message"] for o in attached["leftOut"]}
        assert why["![[cat.png]]"] == (
            "files/cat.png is named like image/png but its content is not; served as application/octet-stream; "
            "only PNG, JPEG, GIF and WebP are sent as images; read it with resources/read"
        )
        assert "can carry script" in why["![[drawing.svg]]"]
        assert (
            why["![[huge.png]]"]
            == f"files/huge.png is {ATTACHMENT_MAX_BYTES + 1} bytes; at most {ATTACHMENT_MAX_BYTES} are read"
        )
        plain = await call(client, "notes_read", {"workspaceUri": ws, "noteId": "Home.md"})
        assert "attachments" not in plain.structured_content and len(plain.content) == 1
        part = await call(
            client,
            "notes_read",
            {"workspaceUri": ws, "noteId": "Home.md", "lines": [4, 4], "includeAttachments": True},
        )
        assert part.structured_content["attachments"]["included"] == []  # only the lines read
        gallery = await call(
            client,
            "notes_read",
            {"workspaceUri": ws, "noteId": "gallery/Gallery.md", "includeAttachments": True},
        )
        budget = gallery.structured_content["attachments"]
        assert [i["path"] for i in budget["included"]] == [f"gallery/g{i}.png" for i in range(IMAGES_MAX)]
        assert [(o["path"], o["reason"]) for o in budget["leftOut"]] == [
            (f"gallery/g{i}.png", "over_budget") for i in (IMAGES_MAX, IMAGES_MAX + 1)
        ]
        assert len([b for b in gallery.content if isinstance(b, types.ImageContent)]) == IMAGES_MAX

        # a move and a delete leave attachments and links to them alone
        args = {"workspaceUri": ws, "noteId": "Trip.md", "newPath": "trips/Trip.md"}
        assert not (await call(client, "notes_move", args)).is_error
        assert (deployment.notes / "trips/Trip.md").read_text() == TRIP  # by default attachment links stay
        args = {"workspaceUri": ws, "noteId": "Travel.md", "newPath": "travel/Travel.md"}
        unclear = await call(
            client, "notes_move", {**args, "updateAttachmentLinks": True, "updateLinks": False}
        )
        assert error_code(unclear) == "invalid_arguments"
        relinked = await call(client, "notes_move", {**args, "updateAttachmentLinks": True})
        assert [(r["id"], r["links"]) for r in relinked.structured_content["rewritten"]] == [
            (
                "travel/Travel.md",
                [{"line": 3, "before": "![](./files/photo.jpg)", "after": "![](../files/photo.jpg)"}],
            )
        ]
        assert (deployment.notes / "travel/Travel.md").read_text() == TRIP.replace("./files", "../files")
        deleted = await call(client, "notes_delete", {"workspaceUri": ws, "noteIds": ["Home.md"]})
        assert not deleted.is_error and not (deployment.notes / "Home.md").exists()
        for path, data in files.items():
            assert (deployment.notes / path).read_bytes() == data, path


async def test_an_attachment_is_read_only_where_the_folder_may_be_read(deployment: Deployment) -> None:
    notes = deployment.notes
    for path in ("shared/a.png", "locked/secret.png"):
        (notes / path).parent.mkdir(parents=True, exist_ok=True)
        (notes / path).write_bytes(png())
    (notes / "shared" / "Note.md").write_text("# Note\n\n![[a.png]] ![[secret.png]]\n")
    ws = deployment.notes_uri
    deployment.write_config(
        alice_workspaces=[],
        alice_extra=f'[[principal.grant]]\nuri = "{ws}/shared"\nrights = ["reader"]\n',
    )
    async with sdk_client("stdio", deployment) as client:
        read = await client.read_resource(f"{ws}/shared/a.png")
        assert read.contents[0].mime_type == "image/png"
        refused = await read_error(client, f"{ws}/locked/secret.png")
        assert "secret" not in refused.replace(f"{ws}/locked/secret.png", "").replace("locked/secret.png", "")
        links = (
            await call(client, "notes_links", {"workspaceUri": ws, "noteId": "shared/Note.md"})
        ).structured_content
        assert [(e["written"], e["target"]) for e in links["embeds"]] == [
            ("![[a.png]]", "shared/a.png"),
            ("![[secret.png]]", None),  # in a folder alice may not read: not found, as if absent
        ]
        note = await call(
            client, "notes_read", {"workspaceUri": ws, "noteId": "shared/Note.md", "includeAttachments": True}
        )
        attached = note.structured_content["attachments"]
        assert [i["path"] for i in attached["included"]] == ["shared/a.png"]
        assert [(o["written"], o["reason"]) for o in attached["leftOut"]] == [("![[secret.png]]", "missing")]
        # health judges against the whole workspace, naming nothing out of reach: the embed of a file alice
        # may not read is not missing, and that file is never an item
        health = {"workspaceUri": ws, "kinds": ["missing_attachment_embed", "unlinked_attachment"]}
        assert (await call(client, "notes_health", health)).structured_content["items"] == []
        (notes / "locked" / "other.png").write_bytes(png())
        (notes / "shared" / "b.png").write_bytes(png())
        report = (await call(client, "notes_health", health)).structured_content["items"]
        assert [(i["kind"], i["id"]) for i in report] == [("unlinked_attachment", "shared/b.png")]


async def test_a_workspace_kept_in_a_database_has_no_attachments(deployment: Deployment) -> None:
    deployment.write_config(extra='[storage]\nnotes = "sqlite"\n')
    (deployment.notes / "a.png").write_bytes(png())  # a file beside the database's notes is not served
    ws = deployment.notes_uri
    async with sdk_client("stdio", deployment) as client:
        made = await call(
            client,
            "notes_create",
            {"workspaceUri": ws, "path": "Home.md", "title": "Home", "body": "![[a.png]] [[Other]]"},
        )
        assert not made.is_error, made
        assert "kept in the database" in await read_error(client, f"{ws}/a.png")
        links = (
            await call(client, "notes_links", {"workspaceUri": ws, "noteId": "Home.md"})
        ).structured_content
        assert "kept in the database" in links["attachmentsUnavailable"]
        assert links["missingAttachments"] == []
        assert [(e["kind"], e["target"]) for e in links["embeds"]] == [("attachment", None)]
        read = await call(
            client, "notes_read", {"workspaceUri": ws, "noteId": "Home.md", "includeAttachments": True}
        )
        assert [o["reason"] for o in read.structured_content["attachments"]["leftOut"]] == ["unavailable"]
