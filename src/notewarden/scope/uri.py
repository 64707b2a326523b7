"""Strict parsing of `file:` URIs naming workspaces and notes.

A URI never authorizes itself: this module only answers "which absolute path, as a tuple
of components, does this text name?" and refuses everything ambiguous. Authorization
(`grants`) and containment on the real filesystem (`fsroot`) come after it.

Grammar accepted (a strict subset of RFC 8089 §2 on top of RFC 3986):

    file-uri     = scheme ":" ( "//" authority path-absolute / path-absolute )
    scheme       = "file"                      ; ASCII case-insensitive
    authority    = "" / "localhost"            ; ASCII case-insensitive
    path-absolute= 1*( "/" segment ) [ "/" ]   ; one optional trailing slash
    segment      = 1*( unreserved / sub-delims / ":" / "@" / pct-encoded )

Rules, each enforced before the next:

1. The input is a `str` of at most 4096 characters, made only of printable ASCII
   (0x21-0x7E). Spaces, controls, tabs and raw non-ASCII are refused, because Python's
   `urlsplit` silently strips or deletes them and the checked string would differ from
   the used one.
2. `?`, `#` and `\\` are refused: RFC 8089 has no query or fragment, and a backslash is a
   path separator to WHATWG parsers (a parser differential).
3. The authority is empty or `localhost`; any other host (`file://evil/...`) and UNC
   forms (`file:////host/share`) are refused rather than silently dropped.
4. Each segment is non-empty and percent-decoded exactly once, on its own. A decoded `/`,
   `\\`, NUL or other control character is refused (`%2F` would merge segments); so is a
   malformed escape (`%ZZ`, a trailing `%`) and a decoded segment that still contains a
   percent-escape (double encoding, `%252e`).
5. The decoded bytes must be strict UTF-8 (overlong `%c0%ae` is refused, not replaced)
   and NFKC-stable (fullwidth `．．`, `／` and ligatures are refused, never normalised).
6. `.` and `..` segments are refused outright, raw or encoded: nothing is resolved
   lexically, so there is nothing to get wrong. DOS drive letters (`c:`, `c|`) as the
   first segment are refused on this POSIX server.
7. A decoded segment is at most 255 bytes; the decoded path at most 4096 bytes.

Comparison is by component tuples, never by string prefix: `/srv/notes-evil` is not
inside `/srv/notes`.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import quote

__all__ = ["MAX_URI_LENGTH", "FileUri", "UriError", "parse_file_uri"]

MAX_URI_LENGTH = 4096
_MAX_SEGMENT_BYTES = 255
_MAX_PATH_BYTES = 4096
_ALLOWED_RAW = re.compile(r"[!$%&'()*+,\-./0-9:;=@A-Z_a-z~]*")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_DRIVE = re.compile(r"[A-Za-z][:|]")
_SAFE_IN_SEGMENT = "!$&'()*+,;=:@-._~"


@functools.lru_cache(maxsize=4096)
def _render(components: tuple[str, ...]) -> str:
    """The canonical text of a URI; cached, since the same few workspace and note URIs are rendered
    several times per call (grants, index keys, results)."""
    return "file:///" + "/".join(quote(c, safe=_SAFE_IN_SEGMENT) for c in components)


class UriError(ValueError):
    """A URI was refused. The message names the rule broken and what is allowed."""


@dataclass(frozen=True, slots=True)
class FileUri:
    """An absolute local path named by a `file:` URI, as decoded components."""

    components: tuple[str, ...]

    @property
    def path(self) -> str:
        return "/" + "/".join(self.components)

    def __str__(self) -> str:
        return _render(self.components)

    def relative_to(self, root: FileUri) -> tuple[str, ...] | None:
        """Components below `root`, `()` for `root` itself, `None` when outside it."""
        n = len(root.components)
        if self.components[:n] != root.components:
            return None
        return self.components[n:]

    def joinpath(self, relative: tuple[str, ...]) -> FileUri:
        return FileUri(self.components + relative)

    @classmethod
    def from_path(cls, path: str) -> FileUri:
        """The URI of an absolute, already-normalised filesystem path from configuration."""
        if not path.startswith("/"):
            raise UriError(f"workspace path {path!r} must be absolute")
        parts = tuple(p for p in path.split("/") if p)
        if any(p in (".", "..") for p in parts):
            raise UriError(f"workspace path {path!r} must be normalised (no '.' or '..')")
        return parse_file_uri(str(cls(parts)))


def parse_file_uri(text: object) -> FileUri:
    """Parse `text` under the module's grammar, or raise `UriError` saying why not."""
    if not isinstance(text, str):
        raise UriError(f"a workspace URI must be a string, got {type(text).__name__}")
    if not text:
        raise UriError("the workspace URI is empty; expected file:///absolute/path")
    if len(text) > MAX_URI_LENGTH:
        raise UriError(f"the URI is {len(text)} characters long; at most {MAX_URI_LENGTH} are allowed")
    return _parse(text)


@functools.lru_cache(maxsize=1024)
def _parse(text: str) -> FileUri:
    """The parse proper: a pure function of the text, so every round of a call parses once (accepted
    URIs are cached; a refused one raises again each time)."""
    bad = next((ch for ch in text if not ("\x21" <= ch <= "\x7e")), None)
    if bad is not None:
        raise UriError(
            f"the URI contains {_describe(bad)}; only printable ASCII is allowed "
            "(percent-encode non-ASCII characters as UTF-8)"
        )
    for ch, name in (("?", "a query ('?')"), ("#", "a fragment ('#')"), ("\\", "a backslash")):
        if ch in text:
            raise UriError(f"the URI contains {name}; file: URIs here have neither")
    if not _ALLOWED_RAW.fullmatch(text):
        ch = next(c for c in text if not _ALLOWED_RAW.fullmatch(c))
        raise UriError(f"the URI contains the character {ch!r}, which must be percent-encoded")
    scheme, sep, rest = text.partition(":")
    if not sep or scheme.lower() != "file":
        raise UriError(
            f"only file: URIs are accepted, got scheme {scheme!r}" if sep else "missing 'file:' scheme"
        )
    if rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        if authority.lower() not in ("", "localhost"):
            raise UriError(f"the URI names host {authority!r}; only local files (file:///...) are accepted")
        if not slash:
            raise UriError("the URI has no path; expected file:///absolute/path")
        path = "/" + path
    elif rest.startswith("/"):
        path = rest
    else:
        raise UriError("the URI path must be absolute; expected file:///absolute/path")
    raw_segments = path[1:].split("/")
    if len(raw_segments) > 1 and raw_segments[-1] == "":
        raw_segments.pop()
    if raw_segments == [""]:
        raise UriError("the URI names the filesystem root '/', which cannot be a workspace")
    components = tuple(_decode_segment(seg, i) for i, seg in enumerate(raw_segments))
    total = sum(len(c.encode()) + 1 for c in components)
    if total > _MAX_PATH_BYTES:
        raise UriError(f"the decoded path is {total} bytes; at most {_MAX_PATH_BYTES} are allowed")
    return FileUri(components)


def _decode_segment(raw: str, index: int) -> str:
    if raw == "":
        raise UriError("the URI has an empty path segment ('//'); UNC and doubled slashes are not accepted")
    if "%" in _ESCAPE.sub("", raw):
        raise UriError(f"segment {raw!r} has a malformed percent-escape; use %XX with two hex digits")
    decoded_bytes = bytes(_percent_bytes(raw))
    try:
        decoded = decoded_bytes.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        raise UriError(f"segment {raw!r} does not decode to valid UTF-8") from None
    for ch in decoded:
        if ch in "/\\":
            raise UriError(f"segment {raw!r} encodes a path separator ({ch!r}); it cannot merge segments")
        if ord(ch) < 0x20 or ord(ch) == 0x7F:
            raise UriError(f"segment {raw!r} encodes {_describe(ch)}, which is not allowed in a path")
    if _ESCAPE.search(decoded):
        raise UriError(f"segment {raw!r} is percent-encoded twice; encode each character once")
    if decoded in (".", ".."):
        raise UriError(f"segment {raw!r} is a dot segment ({decoded!r}); '.' and '..' are not allowed")
    if unicodedata.normalize("NFKC", decoded) != decoded:
        raise UriError(
            f"segment {raw!r} is not NFKC-stable (it contains compatibility characters such as "
            "fullwidth dots or slashes); spell it with the plain characters"
        )
    if index == 0 and _DRIVE.fullmatch(decoded):
        raise UriError(f"segment {decoded!r} looks like a DOS drive letter; this server takes POSIX paths")
    if len(decoded_bytes) > _MAX_SEGMENT_BYTES:
        raise UriError(
            f"a path segment is {len(decoded_bytes)} bytes; at most {_MAX_SEGMENT_BYTES} are allowed"
        )
    return decoded


def _percent_bytes(raw: str) -> bytearray:
    out = bytearray()
    i = 0
    while i < len(raw):
        if raw[i] == "%":
            out.append(int(raw[i + 1 : i + 3], 16))
            i += 3
        else:
            out.append(ord(raw[i]))
            i += 1
    return out


def _describe(ch: str) -> str:
    if ch == " ":
        return "a space"
    if ord(ch) < 0x20 or ord(ch) == 0x7F:
        return f"the control character U+{ord(ch):04X}"
    return f"the non-ASCII character {ch!r} (U+{ord(ch):04X})"
