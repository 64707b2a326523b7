"""Attachments: the files notes embed or link (`![[diagram.png]]`, `![[spec.pdf]]`, `[x](files/a.csv)`).

Rule 1 (what an attachment is): a file whose name ends in one of `FORMATS`' extensions
(case-insensitive): Obsidian's "Accepted file formats" other than Markdown (images avif, bmp, gif,
jpeg, jpg, png, svg, webp; audio flac, m4a, mp3, ogg, wav, webm, 3gp; video mkv, mov, mp4, ogv;
pdf; canvas and base) plus csv, which notes link as data (`[x](files/a.csv)`). A link is an
attachment link when its path's last component ends so (`is_attachment`); every other link is a
note link. No file outside the table is served: a workspace folder holds more than a vault's
attachments (`.obsidian/` settings, scripts, keys), and a hidden path (a component starting with
`.`) is never an attachment.

Rule 2 (resolution, as Obsidian opens a file link): `resolve` runs `links.resolve_path`, the very
rule notes resolve by (path from the root, then from the linking note's folder, or the reverse for a
Markdown link; then by file name anywhere: the one in the linking note's own folder, then the one
with the fewest folders above it, then the first by path), over the attachments the caller may read
(the workspace's files with the table's extensions, in the folders where the scope's right holds,
symlinks and other mounts never followed, hidden folders skipped). An attachment in a folder the
caller may not read is not found: its link is reported missing, as if the file were absent, so a
link never tells of another principal's files. The store says which attachments there are
(`NoteStore.attachment_vault`): the files store's index keeps them beside the notes (`index_refresh`
Rule 11), so a link costs a few indexed look-ups whatever the vault's size.

Rule 3 (type by content, `served_type`): the MIME type comes from the first bytes (`sniff`, a table of
magic numbers: PNG, JPEG, GIF, WebP, BMP, AVIF/HEIC, PDF, MP3 (ID3 or a frame sync), WAV, OGG, FLAC,
MP4/MOV/M4A/3GP (`ftyp`), WebM/Matroska, SVG (XML text with an `<svg` element)). The extension
only refines a container the content names (`.ogv` in an OGG container is `video/ogg`, `.m4a` in
an MP4 one `audio/mp4`). A file whose content contradicts its extension is served with the type of
its content, never with the type its name claims, and the answer says so (`Served.mismatch`); one
whose content matches nothing known is `application/octet-stream` (csv and canvas/base are text:
served as `text/csv` and `application/json` when they are UTF-8). Never refused for lying: the
bytes are the user's, and a type from the content is harmless to hand out.

Rule 4 (SVG): SVG is XML text and may carry script and external references, so it is served as a
text resource (`image/svg+xml`) and never as an image content block (`IMAGE_BLOCK_TYPES`), which a
client may render inline; a model reads it as text if it wants it.

Rule 5 (size): an attachment is read whole, through the workspace's directory handle
(`WorkspaceRoot.read_note`: no symlink followed, no mount crossed, regular files only) and only
when it is at most `ATTACHMENT_MAX_BYTES`; a larger one is refused with its size and the limit.

Rule 6 (stores): attachments are files, so only the files store has them. A workspace kept in a
database (the SQL stores) has no folder: `AttachmentsUnavailable` says so (`no_attachments`, raised
by its store's `attachment_vault` and by `read_attachment`), and callers report its attachment links
as unresolvable for that reason (not as missing).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from notewarden.notes.links import UNRESOLVED, Resolution, VaultLookup, resolve_path
from notewarden.scope.fs_errors import FsError, PathRejected
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.note_paths import split_relative

__all__ = [
    "ATTACHMENT_MAX_BYTES",
    "ATTACHMENT_SUFFIXES",
    "FORMATS",
    "IMAGE_BLOCK_TYPES",
    "AttachmentVault",
    "AttachmentsUnavailable",
    "Served",
    "WithAttachments",
    "is_attachment",
    "link_style",
    "no_attachments",
    "read_attachment",
    "served_type",
    "sniff",
    "suffix",
]

ATTACHMENT_MAX_BYTES: Final = 8 * 1024 * 1024
"""The largest attachment read (Rule 5): a whole PDF or photo fits; its base64 (4/3 larger) still fits
well under the 16 MiB a client's message limit commonly is."""

FORMATS: Final[dict[str, str]] = {
    ".avif": "image/avif", ".bmp": "image/bmp", ".gif": "image/gif", ".jpeg": "image/jpeg",
    ".jpg": "image/jpeg", ".png": "image/png", ".svg": "image/svg+xml", ".webp": "image/webp",
    ".flac": "audio/flac", ".m4a": "audio/mp4", ".mp3": "audio/mpeg", ".ogg": "audio/ogg",
    ".wav": "audio/wav", ".webm": "video/webm", ".3gp": "video/3gpp",
    ".mkv": "video/x-matroska", ".mov": "video/quicktime", ".mp4": "video/mp4", ".ogv": "video/ogg",
    ".pdf": "application/pdf", ".canvas": "application/json", ".base": "application/json",
    ".csv": "text/csv",
}  # fmt: skip
"""Rule 1: the attachment extensions and the type each names."""
ATTACHMENT_SUFFIXES: Final = tuple(FORMATS)
TEXT_TYPES: Final = frozenset({"text/csv", "application/json", "image/svg+xml"})
"""Types served as text (when the bytes are UTF-8)."""
IMAGE_BLOCK_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""What `notes_read` returns as image content blocks: the raster types model providers take (Rule 4)."""
OCTET_STREAM: Final = "application/octet-stream"
_MP3_SYNC: Final = frozenset({b"\xff\xfb", b"\xff\xfa", b"\xff\xf3", b"\xff\xf2", b"\xff\xe3", b"\xff\xe2"})
"""An MPEG audio frame's first two bytes (layer III, MPEG 1, 2 and 2.5, with or without CRC)."""

_FAMILIES: Final = (
    frozenset({"audio/ogg", "video/ogg"}),
    frozenset({"video/webm", "video/x-matroska"}),
    frozenset({"video/mp4", "audio/mp4", "video/3gpp", "video/quicktime"}),
    frozenset({"image/avif", "image/heic"}),
)
"""Containers whose magic number does not tell audio from video (Rule 3): the extension decides."""


class AttachmentsUnavailable(FsError):
    """The workspace is kept in a database: it has no files, so no attachments (Rule 6)."""


def suffix(path: str) -> str:
    name = path.rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    return name[dot:] if dot > 0 else ""


def is_attachment(path: str) -> bool:
    """Rule 1: whether a link's path (or a file's) names an attachment: its last component decides."""
    return suffix(path) in FORMATS


def _ftyp(brand: bytes) -> str:
    if brand in (b"avif", b"avis"):
        return "image/avif"
    if brand in (b"heic", b"heix", b"heim", b"heis", b"mif1", b"msf1"):
        return "image/heic"
    if brand == b"qt  ":
        return "video/quicktime"
    if brand in (b"M4A ", b"M4B "):
        return "audio/mp4"
    if brand.startswith(b"3g"):
        return "video/3gpp"
    return "video/mp4"


_PROLOGUE = re.compile(rb"\s*(?:<\?[^>]*\?>|<!--.*?-->|<!DOCTYPE[^>]*>)", re.DOTALL)


def _is_svg(head: bytes) -> bool:
    """XML text whose first element is `<svg` (after the declaration, comments and a doctype)."""
    text, end = head.removeprefix(b"\xef\xbb\xbf"), -1
    while end != 0:
        found = _PROLOGUE.match(text)
        end = found.end() if found else 0
        text = text[end:]
    return text.lstrip().startswith(b"<svg") and text.lstrip()[4:5] in (b" ", b">", b"\n", b"\t", b"\r", b"/")


def sniff(data: bytes) -> str | None:
    """Rule 3: the type the first bytes name, or None when they name nothing known."""
    head = data[:64]
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith(b"RIFF") and len(head) >= 12:
        return {b"WEBP": "image/webp", b"WAVE": "audio/wav"}.get(head[8:12])
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    if head.startswith(b"BM") and len(head) >= 14 and head[6:10] == b"\0\0\0\0":
        return "image/bmp"
    if len(head) >= 12 and head[4:8] == b"ftyp":
        return _ftyp(head[8:12])
    if head.startswith(b"ID3") or head[:2] in _MP3_SYNC:
        return "audio/mpeg"
    if head.startswith(b"OggS"):
        return "audio/ogg"
    if head.startswith(b"fLaC"):
        return "audio/flac"
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return "video/webm" if b"webm" in data[:64] else "video/x-matroska"
    if _is_svg(data[:4096]):
        return "image/svg+xml"
    return None


@dataclass(frozen=True, slots=True)
class Served:
    """How an attachment is served (Rule 3): its type, whether as text, and why the name was not believed."""

    mime_type: str
    text: str | None
    """The content as text, for a text type whose bytes are UTF-8; None: served as a blob."""
    mismatch: str | None = None


def served_type(path: str, data: bytes) -> Served:
    """Rule 3: the type `data` is served with, `path`'s extension only refining its container."""
    claimed = FORMATS.get(suffix(path))
    found = sniff(data)
    mismatch = None
    if found is None:
        if claimed in ("text/csv", "application/json"):
            found = claimed
        else:
            found = OCTET_STREAM
            if claimed is not None:
                mismatch = f"{path} is named like {claimed} but its content is not; served as {OCTET_STREAM}"
    elif claimed is not None and claimed != found:
        if any(claimed in family and found in family for family in _FAMILIES):
            found = claimed
        else:
            mismatch = f"{path} is named like {claimed} but its content is {found}; served as {found}"
    text = None
    if found in TEXT_TYPES:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            found = OCTET_STREAM
    return Served(found, text, mismatch)


def check_attachment_path(path: str) -> str:
    """Rule 1 for a path a caller gives: plain components, nothing hidden, an attachment's extension."""
    parts = split_relative(path)
    if any(part.startswith(".") for part in parts):
        raise PathRejected(f"{path}: hidden files and folders are never served as attachments")
    if not is_attachment(path):
        shown = ", ".join(s[1:] for s in ATTACHMENT_SUFFIXES)
        raise PathRejected(f"{path}: not a note (.md) nor an attachment; attachments end in one of: {shown}")
    return path


def no_attachments(scope: WorkspaceScope) -> AttachmentsUnavailable:
    """Rule 6: why a workspace kept in the database has no attachments."""
    return AttachmentsUnavailable(
        f"{scope.workspace} is kept in the database: attachments are files in a workspace folder, "
        "so this workspace has none (serve a folder with the files store to use them)"
    )


def read_attachment(scope: WorkspaceScope, path: str, max_bytes: int = ATTACHMENT_MAX_BYTES) -> bytes:
    """Rules 1, 5, 6: an attachment's bytes, read through the directory handle where the scope's right holds."""
    if scope.directory is None:
        raise no_attachments(scope)
    check_attachment_path(path)
    data, _identity = scope.root.read_note(scope.check(path), max_bytes=max_bytes)
    return data


class AttachmentVault:
    """Rule 2: attachment links resolved against the attachments a lookup knows (a store's
    `attachment_vault`)."""

    def __init__(self, files: VaultLookup) -> None:
        self._vault = files

    def resolve(self, path: str, style: str, source_id: str) -> Resolution:
        if not path:
            return UNRESOLVED
        return resolve_path(path, style, source_id, self._vault)


class WithAttachments:
    """A note vault with the attachments beside it (Rule 2): what a move that rewrites attachment
    links plans with (`NoteStore.move_note(relink_attachments=True)`). Attachments never move, so a
    link to one changes only where its base folder moves: the moved note's relative links. A note
    and an attachment with the same path key (`x.png.md` and `x.png`): the note."""

    def __init__(self, notes: VaultLookup, files: VaultLookup) -> None:
        self._notes, self._files = notes, files

    def by_path(self, key: str) -> str | None:
        return self._notes.by_path(key) or self._files.by_path(key)

    def by_name(self, key: str) -> Sequence[str]:
        return [*self._notes.by_name(key), *self._files.by_name(key)]

    def by_alias(self, key: str) -> Sequence[str]:
        return self._notes.by_alias(key)


def link_style(written: str) -> str:
    """A link's style from how it is written: `[[...]]` and `![[...]]` are wiki links."""
    return "wiki" if written.startswith(("[[", "![[")) else "markdown"
