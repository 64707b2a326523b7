"""Rights (`scope.rights`): how grants are written, how they combine, what a scope reaches, and what
a refusal says."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from notewarden.config import ConfigError, parse_config
from notewarden.scope.grants import AuthorizationError, Grants, WorkspaceScope
from notewarden.scope.rights import (
    ALL_RIGHTS,
    BUNDLES,
    DEFAULT_RIGHTS,
    Caller,
    FolderRights,
    Right,
    RightMissing,
    parse_rights,
    reach_of,
    rights_at,
)
from notewarden.scope.uri import FileUri

R, W, D, P, PUB = Right.READ, Right.WRITE, Right.DELETE, Right.PURGE, Right.PUBLISH


def test_every_right_brings_read_and_bundles_name_the_common_sets() -> None:
    assert parse_rights(["write"]) == {R, W}
    assert parse_rights(["purge", "publish"]) == {R, P, PUB}
    assert parse_rights([]) == frozenset()
    assert parse_rights(["reader"]) == {R}
    assert parse_rights(["editor"]) == {R, W}
    assert parse_rights(["maintainer"]) == DEFAULT_RIGHTS == {R, W, D}
    assert parse_rights(["owner"]) == ALL_RIGHTS
    assert parse_rights(["editor", "publish"]) == {R, W, PUB}
    assert set(BUNDLES) == {"reader", "editor", "maintainer", "owner"}


def test_an_unknown_right_names_every_allowed_one() -> None:
    with pytest.raises(ValueError) as info:
        parse_rights(["admin"])
    message = str(info.value)
    assert "'admin' is not a right" in message
    for allowed in [*Right, *BUNDLES]:
        assert allowed in message


def test_grants_add_up_and_never_take_away() -> None:
    grants = [FolderRights((), frozenset({R})), FolderRights(("Projects",), frozenset({R, W}))]
    assert rights_at(grants, ("Home.md",)) == {R}
    assert rights_at(grants, ("Projects", "a.md")) == {R, W}
    assert rights_at(grants, ("Projectsx", "a.md")) == {R}  # a path component, not a string prefix


@pytest.mark.parametrize(
    ("subtree", "right", "reach"),
    [
        ((), R, ((),)),  # read covers the workspace
        ((), W, (("Projects",), ("Team", "Notes"))),  # write only in two folders
        (("Projects",), W, (("Projects",),)),
        (("Projects", "Atlas"), W, (("Projects", "Atlas"),)),  # covered from above
        (("Team",), W, (("Team", "Notes"),)),
        (("Other",), W, ()),
        ((), D, ()),
    ],
)
def test_the_reach_of_a_right_is_the_fewest_folders(
    subtree: tuple[str, ...], right: Right, reach: tuple[tuple[str, ...], ...]
) -> None:
    grants = [
        FolderRights((), frozenset({R})),
        FolderRights(("Projects",), frozenset({R, W})),
        FolderRights(("Projects", "Atlas"), frozenset({R, W})),  # nested in a grant of the same right
        FolderRights(("Team", "Notes"), frozenset({R, W})),
    ]
    assert reach_of(grants, subtree, right) == reach


BASE: dict[str, Any] = {
    "state_dir": "/var/lib/nw",
    "workspace": [{"uri": "file:///srv/wiki"}, {"uri": "file:///srv/home"}],
}


def config_of(*principals: dict[str, Any]) -> Any:
    return parse_config({**BASE, "principal": list(principals)})


def test_a_grant_without_rights_keeps_working_without_the_permanent_operations() -> None:
    c = config_of({"id": "alice", "workspaces": ["file:///srv/wiki"]})
    (held,) = c.principals["alice"].grants.values()
    assert held == (FolderRights((), DEFAULT_RIGHTS),)
    assert P not in DEFAULT_RIGHTS and PUB not in DEFAULT_RIGHTS


def test_folder_grants_and_token_rights_are_read_per_workspace() -> None:
    c = config_of(
        {
            "id": "alice",
            "workspaces": ["file:///srv/home"],
            "rights": ["owner"],
            "grant": [
                {"uri": "file:///srv/wiki", "rights": ["reader"]},
                {"uri": "file:///srv/wiki/Projects", "rights": ["editor"]},
            ],
            "token_sha256": ["a" * 64],
            "token": [{"sha256": "b" * 64, "rights": ["reader"]}],
        }
    )
    alice = c.principals["alice"]
    assert alice.grants[FileUri(("srv", "home"))] == (FolderRights((), ALL_RIGHTS),)
    assert alice.grants[FileUri(("srv", "wiki"))] == (
        FolderRights((), frozenset({R})),
        FolderRights(("Projects",), frozenset({R, W})),
    )
    assert alice.tokens == {"a" * 64: None, "b" * 64: frozenset({R})}
    assert alice.workspaces == (FileUri(("srv", "wiki")), FileUri(("srv", "home")))


@pytest.mark.parametrize(
    ("principal", "fragment"),
    [
        (
            {"id": "a", "workspaces": ["file:///srv/wiki"], "rights": ["admin"]},
            "[[principal]] #1 rights: 'admin' is not a right; use read, write, delete, purge, publish",
        ),
        (
            {"id": "a", "workspaces": ["file:///srv/wiki"], "rights": "reader"},
            "[[principal]] #1 rights: must be a list of rights",
        ),
        (
            {"id": "a", "grant": [{"uri": "file:///srv/elsewhere", "rights": ["reader"]}]},
            "[[principal]] 'a' grant #1: file:///srv/elsewhere is not a [[workspace]] nor a folder inside one",
        ),
        ({"id": "a", "grant": [{"uri": "file:///srv/wiki/P"}]}, "[[principal]] 'a' grant #1 needs rights"),
        (
            {
                "id": "a",
                "workspaces": ["file:///srv/wiki"],
                "grant": [{"uri": "file:///srv/wiki", "rights": ["reader"]}],
            },
            "file:///srv/wiki is granted twice to 'a'",
        ),
        (
            {"id": "a", "token": [{"sha256": "secret-token", "rights": ["reader"]}]},
            "[[principal]] 'a' token #1 sha256: entries must be 64 lowercase hex digits",
        ),
        (
            {"id": "a", "token": [{"sha256": "c" * 64, "rights": ["reader"], "label": "x"}]},
            "unknown key(s) label in [[principal]] 'a' token #1",
        ),
    ],
)
def test_grant_errors_name_the_entry_and_what_is_allowed(principal: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        config_of(principal)
    assert fragment in str(info.value)
    assert "secret-token" not in str(info.value)


def test_a_token_hash_names_one_principal_even_in_a_token_table() -> None:
    with pytest.raises(ConfigError, match="share a token hash"):
        config_of(
            {"id": "a", "token_sha256": ["d" * 64]},
            {"id": "b", "token": [{"sha256": "d" * 64, "rights": ["reader"]}]},
        )


@pytest.fixture
def grants(tmp_path: Path) -> Iterator[Grants[Any]]:
    for folder in ("wiki/Projects", "wiki/Team", "home"):
        (tmp_path / folder).mkdir(parents=True)
    config = parse_config(
        {
            "state_dir": str(tmp_path / "state"),
            "workspace": [{"uri": f"file://{tmp_path}/wiki"}, {"uri": f"file://{tmp_path}/home"}],
            "principal": [
                {
                    "id": "alice",
                    "grant": [
                        {"uri": f"file://{tmp_path}/wiki", "rights": ["reader"]},
                        {"uri": f"file://{tmp_path}/wiki/Projects", "rights": ["editor"]},
                    ],
                },
                {"id": "bob", "workspaces": [f"file://{tmp_path}/home"], "rights": ["owner"]},
            ],
        }
    )
    found = Grants(config)
    yield found
    found.close()


def test_a_scope_reaches_only_where_its_right_holds(grants: Grants[Any], tmp_path: Path) -> None:
    wiki = f"file://{tmp_path}/wiki"
    reading = grants.authorize_workspace(Caller("alice", R), wiki)
    assert reading.regions == ("",) and reading.contains("Team/x.md")
    writing = grants.authorize_workspace(Caller("alice", W), wiki)
    assert writing.regions == ("Projects",)
    assert writing.contains("Projects/a.md") and not writing.contains("Team/x.md")
    assert writing.check("Projects/a.md") == "Projects/a.md"
    with pytest.raises(RightMissing) as info:
        writing.check("Team/x.md")
    message = str(info.value)
    assert "write is not granted to alice at Team/x.md" in message
    assert "alice holds read there" in message and f"write in: {wiki}/Projects" in message
    assert info.value.right is W


def test_a_folder_without_the_right_is_refused_saying_where_it_holds(
    grants: Grants[Any], tmp_path: Path
) -> None:
    with pytest.raises(RightMissing) as info:
        grants.authorize_workspace(Caller("alice", W), f"file://{tmp_path}/wiki/Team")
    message = str(info.value)
    assert f"write is not granted to alice in file://{tmp_path}/wiki/Team" in message
    assert "alice holds read there" in message
    assert "granted by the server's operator" in message
    with pytest.raises(RightMissing, match="purge is not granted"):
        grants.authorize_workspace(Caller("alice", P), f"file://{tmp_path}/wiki")


def test_a_workspace_without_any_grant_is_not_granted_and_names_only_the_callers_grants(
    grants: Grants[Any], tmp_path: Path
) -> None:
    with pytest.raises(AuthorizationError) as info:
        grants.authorize_workspace(Caller("alice", R), f"file://{tmp_path}/home")
    message = str(info.value)
    assert (
        f"file://{tmp_path}/wiki (read)" in message
        and f"file://{tmp_path}/wiki/Projects (read, write)" in message
    )
    assert "bob" not in message and "owner" not in message


def test_a_credential_narrows_and_the_process_caps_but_neither_widens(
    grants: Grants[Any], tmp_path: Path
) -> None:
    wiki = f"file://{tmp_path}/wiki"
    with pytest.raises(RightMissing) as info:
        grants.authorize_workspace(Caller("alice", W, frozenset({R})), wiki)
    assert "Your credential carries only read" in str(info.value)
    with pytest.raises(RightMissing):  # a credential with every right gets no more than the grant
        grants.authorize_workspace(Caller("alice", D, ALL_RIGHTS), wiki)
    assert grants.rights_held("alice", None) == {R, W}
    assert grants.rights_held("alice", frozenset({R})) == {R}
    assert grants.rights_held("mallory", None) == frozenset()
    grants.cap = frozenset({R})
    assert grants.rights_held("bob", None) == {R}
    with pytest.raises(RightMissing, match=r"started with only read \(serve --rights\)"):
        grants.authorize_workspace(Caller("bob", W), f"file://{tmp_path}/home")


def test_granted_workspaces_are_those_where_the_right_holds_somewhere(
    grants: Grants[Any], tmp_path: Path
) -> None:
    assert [str(w) for w in grants.granted_workspaces(Caller("alice", W))] == [f"file://{tmp_path}/wiki"]
    assert grants.granted_workspaces(Caller("alice", D)) == ()


def test_the_whole_workspace_of_a_scope_keeps_its_right() -> None:
    held = (FolderRights((), frozenset({R})), FolderRights(("Projects",), frozenset({R, W})))
    scope = WorkspaceScope(
        "alice", FileUri(("w",)), ("Projects", "Atlas"), None, W, (("Projects", "Atlas"),), held
    )
    whole = scope.whole_workspace()
    assert whole.subtree == () and whole.regions == ("Projects",)
    assert whole.contains("Projects/x.md") and not whole.contains("Home.md")
    assert whole.may(R, "Home.md") and not whole.may(W, "Home.md")
    server = scope.as_server()
    assert server.contains("Home.md") and server.right is R
