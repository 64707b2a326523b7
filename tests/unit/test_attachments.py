"""`notes.attachments`: types by content (magic numbers), which links are attachment links, how they
resolve (as Obsidian opens a file link), and the listing (the files store's) and reading through the
directory handle; a workspace kept in a database has none (tests/storage/test_store_contract.py)."""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from notewarden.ledger.sqlite import SqliteLedger
from notewarden.notes.attachments import (
    ATTACHMENT_MAX_BYTES,
    AttachmentsUnavailable,
    AttachmentVault,
    WithAttachments,
    check_attachment_path,
    is_attachment,
    link_style,
    read_attachment,
    served_type,
    sniff,
)
from notewarden.notes.files import FILES_STORE_SCHEMA, FilesNoteStore
from notewarden.notes.health import is_attachment as health_is_attachment
from notewarden.notes.links import MemoryVault, relink
from notewarden.scope.fs_errors import EscapeBlocked, FsError, PathRejected
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.rights import FolderRights, Right, RightMissing
from notewarden.scope.uri import FileUri


def png(width: int = 1, height: int = 1) -> bytes:
    """A real, valid PNG of `width` x `height` grey pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\0" + b"\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9"
PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
SVG = b'<?xml version="1.0"?>\n<!-- made by hand -->\n<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>\n'

MAGIC = [
    (png(), "image/png"),
    (JPEG, "image/jpeg"),
    (b"GIF89a\x01\x00\x01\x00", "image/gif"),
    (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp"),
    (b"RIFF\x24\x00\x00\x00WAVEfmt ", "audio/wav"),
    (b"BM\x3a\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00", "image/bmp"),
    (b"\x00\x00\x00\x1cftypavif\x00\x00\x00\x00", "image/avif"),
    (b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00", "image/heic"),
    (b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00", "video/mp4"),
    (b"\x00\x00\x00\x14ftypqt  \x00\x00\x00\x00", "video/quicktime"),
    (b"\x00\x00\x00\x18ftypM4A \x00\x00\x00\x00", "audio/mp4"),
    (b"\x00\x00\x00\x14ftyp3gp4\x00\x00\x00\x00", "video/3gpp"),
    (PDF, "application/pdf"),
    (b"ID3\x04\x00\x00\x00\x00\x00\x00", "audio/mpeg"),
    (b"\xff\xfb\x90\x64\x00", "audio/mpeg"),
    (b"OggS\x00\x02", "audio/ogg"),
    (b"fLaC\x00\x00\x00\x22", "audio/flac"),
    (b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x84webm", "video/webm"),
    (b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x88matroska", "video/x-matroska"),
    (SVG, "image/svg+xml"),
    (b"\xef\xbb\xbf<svg viewBox='0 0 1 1'/>", "image/svg+xml"),
]


@pytest.mark.parametrize(("data", "expected"), MAGIC, ids=[m for _, m in MAGIC])
def test_the_first_bytes_name_the_type(data: bytes, expected: str) -> None:
    assert sniff(data) == expected


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"# a note\n",
        b"<html><body><svg></svg></body></html>",  # an HTML page with an inline SVG is not an SVG file
        b"<svgfoo/>",
        b"MZ\x90\x00\x03\x00",  # an executable
        b"\xff\xd8",  # too short for JPEG
        b"RIFF\x24\x00\x00\x00AVI ",
        b"a,b\n1,2\n",
    ],
)
def test_unknown_content_names_nothing(data: bytes) -> None:
    assert sniff(data) is None


def test_the_content_decides_and_the_extension_only_refines_a_container() -> None:
    assert served_type("a.png", png()) == served_type("a.png", png())
    right = served_type("a.png", png())
    assert (right.mime_type, right.text, right.mismatch) == ("image/png", None, None)
    lying = served_type("photo.jpg", png())
    assert lying.mime_type == "image/png"
    assert (
        lying.mismatch
        == "photo.jpg is named like image/jpeg but its content is image/png; served as image/png"
    )
    script = served_type("cat.png", b"#!/bin/sh\nrm -rf /\n")
    assert script.mime_type == "application/octet-stream" and script.text is None
    assert script.mismatch is not None and "not" in script.mismatch
    assert served_type("clip.ogv", b"OggS\x00\x02").mime_type == "video/ogg"
    assert served_type("song.m4a", b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00").mime_type == "audio/mp4"
    assert served_type("a.ogg", b"OggS\x00").mismatch is None
    table = served_type("data/a.csv", b"a,b\n1,2\n")
    assert (table.mime_type, table.text) == ("text/csv", "a,b\n1,2\n")
    assert served_type("board.canvas", b'{"nodes": []}').mime_type == "application/json"
    assert served_type("a.csv", b"\xff\xfe\x00bin").mime_type == "application/octet-stream"


def test_svg_is_served_as_text_whatever_it_is_named() -> None:
    svg = served_type("d.svg", SVG)
    assert (svg.mime_type, svg.text, svg.mismatch) == ("image/svg+xml", SVG.decode(), None)
    disguised = served_type("d.png", SVG)
    assert disguised.mime_type == "image/svg+xml" and disguised.text is not None
    assert disguised.mismatch is not None


def test_attachment_links_are_told_by_the_last_components_extension() -> None:
    for path in ("diagram.png", "files/Spec.PDF", "a.canvas", "files/a.csv", "x/y.JPEG", "song.mp3"):
        assert is_attachment(path) and health_is_attachment(path), path
    for path in ("Plan", "v1.2 notes", "x.md", "images.png/Note", ".png", "archive.zip", ""):
        assert not is_attachment(path) and not health_is_attachment(path), path
    assert link_style("![[a.png]]") == "wiki" and link_style("[[a.png]]") == "wiki"
    assert link_style("![x](a.png)") == "markdown" and link_style("[x](a.png)") == "markdown"


def test_a_caller_may_name_only_plain_visible_attachment_paths() -> None:
    assert check_attachment_path("files/a.png") == "files/a.png"
    for bad, said in [
        ("../a.png", "'..'"),
        ("/etc/a.png", "absolute"),
        (".obsidian/a.png", "hidden"),
        ("files/.secret.png", "hidden"),
        ("id_rsa", "not a note"),
        ("files/run.sh", "attachments end in one of"),
    ]:
        with pytest.raises(PathRejected, match=said):
            check_attachment_path(bad)


def test_attachments_resolve_as_obsidian_opens_a_file_link() -> None:
    vault = AttachmentVault(
        MemoryVault(["a/diagram.png", "b/c/diagram.png", "diagram.png", "x/y/only.pdf", "x/img.png"])
    )
    assert vault.resolve("diagram.png", "wiki", "Home.md").target == "diagram.png"  # exact path
    assert (
        vault.resolve("diagram.png", "wiki", "a/Note.md").target == "diagram.png"
    )  # a wiki path: root first
    assert (
        vault.resolve("diagram.png", "markdown", "a/Note.md").target == "a/diagram.png"
    )  # Markdown: folder first
    no_root = AttachmentVault(MemoryVault(["a/diagram.png", "b/c/diagram.png"]))
    assert no_root.resolve("diagram.png", "wiki", "b/c/N.md").target == "b/c/diagram.png"  # own folder
    assert no_root.resolve("diagram.png", "wiki", "Home.md").target == "a/diagram.png"  # fewest folders
    assert vault.resolve("only.pdf", "wiki", "Home.md").target == "x/y/only.pdf"  # by name anywhere
    assert vault.resolve("y/only.pdf", "wiki", "Home.md").target == "x/y/only.pdf"  # a partial path
    assert vault.resolve("img.png", "markdown", "x/Note.md").target == "x/img.png"  # relative first
    assert vault.resolve("./img.png", "markdown", "x/Note.md").via == "relative"
    assert vault.resolve("c/diagram.png", "wiki", "Home.md").target == "b/c/diagram.png"
    assert vault.resolve("DIAGRAM.PNG", "wiki", "Home.md").target == "diagram.png"  # case-insensitive
    assert vault.resolve("missing.png", "wiki", "Home.md").target is None
    assert vault.resolve("../../diagram.png", "markdown", "a/Note.md").target is None  # above the root
    assert vault.resolve("", "wiki", "Home.md").target is None
    shortest = AttachmentVault(MemoryVault(["p/q/r.png", "p/r.png", "z/r.png"]))
    assert shortest.resolve("r.png", "wiki", "Home.md").target == "p/r.png"  # fewest folders, then by path


def test_a_move_rewrites_attachment_links_only_with_the_attachments_in_view() -> None:
    text = "# Trip\n\n![](./img/a.png) ![[a.png]] ![x](img/a.png) [[Other]]\n"
    notes = MemoryVault(["Trip.md", "Other.md"])
    kept, none = relink(text, "Trip.md", "x/Trip.md", "Trip.md", "x/Trip.md", notes)
    assert (kept, none) == (text, [])  # attachments out of view: never rewritten
    both = WithAttachments(notes, MemoryVault(["img/a.png"]))
    moved, rewrites = relink(text, "Trip.md", "x/Trip.md", "Trip.md", "x/Trip.md", both)
    assert moved == "# Trip\n\n![](../img/a.png) ![[a.png]] ![x](img/a.png) [[Other]]\n"
    assert [(r.old, r.new) for r in rewrites] == [("![](./img/a.png)", "![](../img/a.png)")]
    assert both.by_path("img/a.png") == "img/a.png" and both.by_path("other") == "Other.md"
    assert list(both.by_name("a.png")) == ["img/a.png"] and list(both.by_alias("a.png")) == []


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[tuple[Path, WorkspaceRoot]]:
    folder = tmp_path / "vault"
    (folder / "files").mkdir(parents=True)
    (folder / "private").mkdir()
    (folder / ".obsidian").mkdir()
    (folder / "files" / "a.png").write_bytes(png())
    (folder / "files" / "b.pdf").write_bytes(PDF)
    (folder / "files" / "notes.txt").write_text("not an attachment")
    (folder / "private" / "secret.png").write_bytes(png())
    (folder / ".obsidian" / "icon.png").write_bytes(png())
    (folder / "files" / "big.png").write_bytes(png() + b"\0" * 64)
    (tmp_path / "outside.png").write_bytes(png())
    os.symlink(tmp_path / "outside.png", folder / "files" / "out.png")
    os.symlink("a.png", folder / "files" / "in.png")
    with WorkspaceRoot.open(str(folder)) as root:
        yield folder, root


FIXTURE_FILES = (
    "files/a.png",
    "files/b.pdf",
    "files/big.png",
    "files/notes.txt",
    "files/out.png",
    "files/in.png",
    "private/secret.png",
    ".obsidian/icon.png",
)


def found(vault: AttachmentVault) -> list[str]:
    """The files of the `workspace` fixture that `vault` opens by their own path."""
    return [path for path in FIXTURE_FILES if vault.resolve(path, "markdown", "n.md").target == path]


def test_listing_and_reading_stay_in_the_folder_and_the_callers_reach(
    workspace: tuple[Path, WorkspaceRoot], tmp_path: Path
) -> None:
    folder, root = workspace
    held = (FolderRights(("files",), frozenset({Right.READ})),)
    scope = WorkspaceScope("alice", FileUri.from_path(str(folder)), (), root, Right.READ, (("files",),), held)
    ledger = SqliteLedger(tmp_path / "ledger.sqlite3", components=[FILES_STORE_SCHEMA])
    store = FilesNoteStore(ledger=ledger)  # the store whose workspaces have attachments: its index lists them
    try:
        listed = found(store.attachment_vault(scope))
        assert listed == ["files/a.png", "files/b.pdf", "files/big.png"]  # no symlink, no hidden
        everything = WorkspaceScope("alice", FileUri.from_path(str(folder)), (), root)
        assert "private/secret.png" in found(store.attachment_vault(everything))
    finally:
        store.close()
        ledger.close()
    assert read_attachment(scope, "files/a.png") == png()
    with pytest.raises(RightMissing):
        read_attachment(scope, "private/secret.png")
    for link in ("files/out.png", "files/in.png"):
        with pytest.raises(EscapeBlocked, match="symbolic link"):
            read_attachment(everything, link)
    with pytest.raises(FsError, match="at most 20 may be read"):
        read_attachment(everything, "files/big.png", max_bytes=20)
    with pytest.raises(PathRejected, match="hidden"):
        read_attachment(everything, ".obsidian/icon.png")
    with pytest.raises(PathRejected, match="not a note"):
        read_attachment(everything, "files/notes.txt")
    assert ATTACHMENT_MAX_BYTES == 8 * 1024 * 1024


def test_a_workspace_kept_in_a_database_has_no_attachments() -> None:
    scope = WorkspaceScope("alice", FileUri(("db",)), (), None)
    with pytest.raises(AttachmentsUnavailable, match="kept in the database"):
        read_attachment(scope, "a.png")
