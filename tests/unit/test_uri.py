"""The strict file: URI parser: hostile forms from security-notes §4, and properties."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from notewarden.scope.uri import FileUri, UriError, parse_file_uri

NOTES = parse_file_uri("file:///srv/notes")

ACCEPTED = [
    ("file:///srv/notes", ("srv", "notes")),
    ("file://localhost/srv/notes", ("srv", "notes")),
    ("file://LOCALHOST/srv/notes/", ("srv", "notes")),
    ("FILE:/srv/notes", ("srv", "notes")),
    ("file:///srv/notes/a%20b.md", ("srv", "notes", "a b.md")),
    ("file:///srv/notes/100%25.md", ("srv", "notes", "100%.md")),
    ("file:///srv/notes/caf%C3%A9.md", ("srv", "notes", "café.md")),
    ("file:///srv/notes/%7Euser", ("srv", "notes", "~user")),
    ("file:///srv/notes/a.md.", ("srv", "notes", "a.md.")),
]

# (uri, a fragment the error message must contain): every hostile form of security-notes §4.
REJECTED = [
    ("file:///srv/notes/%2e%2e/private.md", "dot segment"),
    ("file:///srv/notes/%2E%2E/private.md", "dot segment"),
    ("file:///srv/notes/.%2e/private.md", "dot segment"),
    ("file:///srv/notes/../private.md", "dot segment"),
    ("file:///srv/notes/./a.md", "dot segment"),
    ("file:///srv/notes/..%2fsecret", "path separator"),
    ("file:///srv/notes/sub%2fa.md", "path separator"),
    ("file:///srv/notes/%5c..%5csecret", "path separator"),
    ("file:///srv/notes/..\\secret", "backslash"),
    ("file:///srv/notes/%252e%252e/x", "twice"),
    ("file:///srv/notes/%%32%65", "malformed"),
    ("file:///srv/notes/%ZZ", "malformed"),
    ("file:///srv/notes/a%", "malformed"),
    ("file:///srv/notes/%00.md", "control"),
    ("file:///srv/notes/a%0a.md", "control"),
    ("file:///srv/notes/%c0%ae%c0%ae/x", "UTF-8"),
    ("file:///srv/notes/%ff", "UTF-8"),
    ("file:///srv/notes/%EF%BC%8E%EF%BC%8E/x", "NFKC"),  # fullwidth dots
    ("file:///srv/notes/%E2%80%A4x", "NFKC"),  # one dot leader
    ("file:///srv/notes/%EF%BC%8Fetc", "NFKC"),  # fullwidth solidus
    ("file:///srv/notes/%EF%BC%BCetc", "NFKC"),  # fullwidth reverse solidus
    ("file:///srv/note%C5%BF", "NFKC"),  # long s
    ("file:///srv/notes/．．/x", "non-ASCII"),
    ("file:///srv/notes?x=1", "query"),
    ("file:///srv/notes#frag", "fragment"),
    (" file:///srv/notes", "space"),
    ("file:///srv/no\ttes", "control"),
    ("file:///srv/notes\n", "control"),
    ("file:///srv/no\rtes", "control"),
    ("file://evil.example/srv/notes", "host"),
    ("file://srv/notes", "host"),
    ("file:////srv/notes", "empty path segment"),
    ("file:///srv//notes", "empty path segment"),
    ("file:///c:/notes", "drive"),
    ("file:///c%7C/notes", "drive"),
    ("file:///c|/notes", "percent-encoded"),
    ("file:c:/notes", "absolute"),
    ("file:notes", "absolute"),
    ("file:///", "root"),
    ("http://example.com/srv/notes", "only file:"),
    ("/srv/notes", "scheme"),
    ("", "empty"),
    ("file:///srv/" + "a" * 256, "255"),
    ("file:///" + "/".join(["abcdefg"] * 600), "characters long"),
    ("file:///srv/notes/a<b", "percent-encoded"),
]


@pytest.mark.parametrize(("text", "components"), ACCEPTED)
def test_accepts_plain_local_uris(text: str, components: tuple[str, ...]) -> None:
    assert parse_file_uri(text).components == components


@pytest.mark.parametrize(("text", "fragment"), REJECTED)
def test_rejects_hostile_forms_with_a_clear_reason(text: str, fragment: str) -> None:
    with pytest.raises(UriError) as caught:
        parse_file_uri(text)
    assert fragment.lower() in str(caught.value).lower()


@pytest.mark.parametrize("value", [None, 7, b"file:///srv/notes", ["file:///srv/notes"]])
def test_rejects_non_strings(value: object) -> None:
    with pytest.raises(UriError, match="must be a string"):
        parse_file_uri(value)


def test_containment_is_by_components_not_string_prefix() -> None:
    evil = parse_file_uri("file:///srv/notes-evil/secret.md")
    assert "/srv/notes-evil".startswith(NOTES.path)  # the bug a string check would have
    assert evil.relative_to(NOTES) is None
    assert parse_file_uri("file:///srv/notes/sub/a.md").relative_to(NOTES) == ("sub", "a.md")
    assert NOTES.relative_to(NOTES) == ()
    assert parse_file_uri("file:///srv").relative_to(NOTES) is None


def test_from_path_refuses_relative_or_unnormalised_paths() -> None:
    assert FileUri.from_path("/srv/notes") == NOTES
    with pytest.raises(UriError):
        FileUri.from_path("srv/notes")
    with pytest.raises(UriError):
        FileUri.from_path("/srv/notes/../etc")


segment_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"),
    min_size=1,
    max_size=20,
)


@settings(max_examples=500, deadline=None)
@given(st.lists(segment_text, min_size=1, max_size=6))
def test_canonical_form_round_trips(segments: list[str]) -> None:
    """Any URI we print parses back to the same components (or is refused for a stated reason)."""
    try:
        uri = parse_file_uri(str(FileUri(tuple(segments))))
    except UriError:
        return
    assert uri.components == tuple(segments)
    assert parse_file_uri(str(uri)) == uri


@settings(max_examples=3000, deadline=None)
@given(
    st.lists(
        st.sampled_from([*"file:/%.2eEfFcC05aA\\?#~ ", "%2e", "%2f", "%5c", "..", "//"]), max_size=30
    ).map("".join)
)
def test_no_accepted_uri_escapes_and_every_rejection_is_a_uri_error(text: str) -> None:
    """Fuzz with the characters that matter: nothing accepted has a dot segment or a separator
    inside a component, so nothing can resolve outside the workspace it is matched against."""
    try:
        uri = parse_file_uri("file:///srv/notes/" + text)
    except UriError as exc:
        assert str(exc)
        return
    assert uri.relative_to(NOTES) is not None
    for component in uri.components:
        assert component not in ("", ".", "..")
        assert "/" not in component and "\\" not in component and "\x00" not in component


@settings(max_examples=3000, deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_text_never_raises_anything_but_uri_error(text: str) -> None:
    with contextlib.suppress(UriError):
        parse_file_uri(text)
