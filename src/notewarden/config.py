"""Configuration: a TOML file, or the `--workspace DIR` shorthand for a local stdio server.

Everything that decides who may touch what comes from here and from the caller's
credentials, never from anything a client says. The file is validated as a whole when
loaded; an error names the key, what was wrong and what is allowed.

Rule 1: each table is a pydantic dataclass checked as `toml_tables` Rule 1 says: an unknown key
names the key, the table and the allowed keys; a wrong value names the key, what is allowed and
what was given, never a string that could be a secret.
Rule 2: the rules that span tables (a grant names a configured workspace, a token hash or an OAuth
subject names one principal, the note store and the ledger pair up) are checked in `parse_config`.
Rule 3: config sits above scope: it uses scope's URI grammar and note-path rules, and scope reads
the resulting `Config` through `scope.grants.GrantConfig` without importing this module.

    state_dir = "/var/lib/notewarden"          # ledger, sealing key (default: XDG state dir)
    confirmation_ttl_seconds = 600             # how long a round-1 confirmation stays usable

    [[workspace]]
    uri = "file:///srv/notes/team-a"
    [workspace.daily]                          # notes_daily (optional; these are the defaults)
    folder = ""                                # relative to the workspace root
    format = "YYYY-MM-DD"                      # Moment.js tokens, as Obsidian's Daily notes plugin
    template = "Templates/Daily.md"            # a note of the workspace (default: a "# <date>" heading)

    [[principal]]
    id = "alice"
    workspaces = ["file:///srv/notes/team-a"]  # granted whole, with `rights`
    rights = ["maintainer"]                    # default: read, write, delete (scope/rights.py)
    token_sha256 = ["<hex sha-256 of a bearer token>"]   # a token with all of alice's rights
    [[principal.grant]]                        # a workspace or a folder inside one, with its rights
    uri = "file:///srv/notes/wiki/Projects"
    rights = ["editor"]
    [[principal.token]]                        # a token narrowed to some of alice's rights
    sha256 = "<hex sha-256 of another token>"
    rights = ["reader"]

    [stdio]
    principal = "alice"

    [http]
    host = "127.0.0.1"
    port = 8765
    allowed_origins = ["http://localhost:*"]   # browser origins allowed to call /mcp
    max_body_bytes = 1048576

    [oauth]                                    # OAuth 2.1 resource server (HTTP; see docs/security.md)
    resource = "https://notes.example.com/mcp" # this server's URL: the audience tokens must carry
    issuer = "https://auth.example.com"        # the only accepted `iss`
    jwks_file = "/etc/notewarden/jwks.json"    # or jwks_url = "https://auth.example.com/jwks.json"
    connect_client_id = "notewarden-connect"   # connect pages: sign in at the server (code + PKCE)

    [limits]                                   # calls per principal and process, by the right a tool needs
    write_per_minute = 120
    delete_per_minute = 30
    purge_per_minute = 10
    publish_per_minute = 30

    [sandbox]
    enabled = true                             # Landlock self-sandbox at start-up of `serve`

    [history]                                  # saved versions of notes (notes_history, notes_revert)
    max_versions = 50                          # per note, newest kept
    max_age_days = 90                          # older versions go (those of trashed notes stay)

    [audit]                                    # the record of every change (notes/change_log.py)
    retention_days = 365                       # older records go; `notewarden audit` shows them

    [storage]                                  # read at start-up; see docs/deployment.md
    notes = "files"                            # "files" (default), "sqlite" or "postgres"
    ledger = "sqlite"                          # "sqlite" (default) or "postgres"
    database_url = "postgresql://notewarden@db.internal/notewarden"  # or NOTEWARDEN_DATABASE_URL
    pool_size = 8
    connect_timeout_seconds = 5
    statement_timeout_seconds = 30
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    Field,
    PlainValidator,
    Strict,
    StrictBool,
    StrictInt,
    StrictStr,
)
from pydantic.dataclasses import dataclass as table

from notewarden.embeddings import SearchSettings
from notewarden.ledger import DURABILITY_LEVELS, Durability
from notewarden.notes.change_log import RecordRetention
from notewarden.notes.daily import DEFAULT_FORMAT, DailyNotes, format_moment
from notewarden.notes.history import Retention
from notewarden.publish.config import PublishSettings, parse_publish
from notewarden.scope.fs_errors import PathRejected
from notewarden.scope.note_paths import split_relative
from notewarden.scope.rights import BUNDLES, DEFAULT_RIGHTS, FolderRights, Right, parse_rights
from notewarden.scope.uri import FileUri, parse_file_uri
from notewarden.toml_tables import (
    FORBID,
    ConfigError,
    Seconds,
    String,
    Table,
    Tables,
    Text,
    Texts,
    between,
    must,
    one_of,
    validate_table,
)

__all__ = [
    "DATABASE_URL_ENV",
    "Config",
    "ConfigError",
    "HttpSettings",
    "LimitSettings",
    "OAuthSettings",
    "Principal",
    "PrincipalConfig",
    "SandboxSettings",
    "StorageSettings",
    "default_state_dir",
    "load_config",
    "read_config_text",
]

LOCAL_PRINCIPAL = "local"
DATABASE_URL_ENV = "NOTEWARDEN_DATABASE_URL"
_PRINCIPAL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}")
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_NOT_A_HASH = "entries must be 64 lowercase hex digits (the SHA-256 of a token, never the token)"


def _file_uri(value: object) -> FileUri:
    return value if isinstance(value, FileUri) else parse_file_uri(value)


def _http_url(value: str) -> str:
    parsed = urlsplit(value)
    if parsed.scheme not in ("https", "http") or not parsed.netloc or parsed.fragment or parsed.query:
        shown = "a URL with user info" if "@" in parsed.netloc else repr(value)  # it may hold a password
        raise ValueError(f"must be an http(s) URL without query or fragment, got {shown}")
    return value


AbsolutePath = Annotated[
    Path,
    AfterValidator(must(Path.is_absolute, lambda path: f"{str(path)!r} must be an absolute path")),
    Field(description="an absolute path"),
]
WebUrl = Annotated[StrictStr, AfterValidator(_http_url), Field(description="an http(s) URL")]
Uri = Annotated[FileUri, PlainValidator(_file_uri), Field(description="a file:/// URI")]


def _rights(value: object) -> frozenset[Right]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"must be {RIGHT_NAMES}")
    return parse_rights(value)


RIGHT_NAMES = f'a list of rights ({", ".join(Right)}) or bundles ({", ".join(BUNDLES)}), e.g. ["reader"]'
Rights = Annotated[frozenset[Right], PlainValidator(_rights), Field(description=RIGHT_NAMES)]
TokenHash = Annotated[StrictStr, AfterValidator(must(_SHA256_HEX.fullmatch, lambda _: _NOT_A_HASH))]


@table(frozen=True, slots=True, config=FORBID)
class PrincipalConfig:
    """A `[[principal]]` table as written; `parse_config` resolves it into a `Principal`."""

    id: Annotated[
        StrictStr,
        AfterValidator(
            must(_PRINCIPAL_ID.fullmatch, lambda pid: f"{pid!r} must match {_PRINCIPAL_ID.pattern}")
        ),
        Field(description="a principal name"),
    ]
    workspaces: Annotated[tuple[Uri, ...], Field(description="a list of workspace URIs")] = ()
    rights: Rights | None = Field(default=None, description=RIGHT_NAMES)
    grant: Tables = ()
    token_sha256: Annotated[
        frozenset[TokenHash], Field(description="a list of SHA-256 hex digests of tokens")
    ] = frozenset()
    token: Tables = ()
    oauth_subjects: Annotated[frozenset[Text], Field(description="a list of non-empty strings")] = frozenset()


@table(frozen=True, config=FORBID)
class _Grant:
    """`[[principal.grant]]`: a workspace, or a folder inside one, and the rights it gives there."""

    uri: Uri
    rights: Rights


@table(frozen=True, config=FORBID)
class _Token:
    """`[[principal.token]]`: a token of the principal that carries only some of its rights."""

    sha256: Annotated[TokenHash, Field(description="the SHA-256 hex digest of a token")]
    rights: Rights


@dataclasses.dataclass(frozen=True, slots=True)
class Principal:
    """A principal as the server uses it: where it holds which rights, and its credentials."""

    id: str
    grants: Mapping[FileUri, tuple[FolderRights, ...]]
    """Per workspace (in configuration order), the folders granted and their rights."""
    tokens: Mapping[str, frozenset[Right] | None] = dataclasses.field(default_factory=dict)
    """Token SHA-256 -> the rights it narrows to (None: all of the principal's)."""
    oauth_subjects: frozenset[str] = frozenset()

    @property
    def workspaces(self) -> tuple[FileUri, ...]:
        return tuple(w for w, held in self.grants.items() if any(g.rights for g in held))

    @property
    def token_sha256(self) -> frozenset[str]:
        return frozenset(self.tokens)


@table(frozen=True, slots=True, config=FORBID)
class HttpSettings:
    host: Text = "127.0.0.1"
    port: Annotated[StrictInt, Field(ge=0, le=65535, description="an integer 0-65535")] = 8765
    allowed_origins: Texts = ()
    max_body_bytes: Annotated[StrictInt, Field(ge=1024, description="an integer >= 1024")] = 1024 * 1024


_NOTE_STORES = {"files": ("sqlite", "postgres"), "sqlite": ("sqlite",), "postgres": ("postgres",)}
"""Each note store and the ledgers it can share a transaction with (the first is the default)."""


_DURABILITIES = (
    'use "normal" (survives a killed process) or "full" (also survives power loss, one fsync per step)'
)


@table(frozen=True, slots=True, config=FORBID)
class StorageSettings:
    """Where notes and confirmations live. A SQL note store shares the ledger's database, so that a
    delete and its claim are one transaction: notes "sqlite" needs ledger "sqlite", "postgres" needs
    "postgres"; the files store works with either ledger."""

    notes: Annotated[
        str, one_of(tuple(_NOTE_STORES), "is not a note store; use one of files, sqlite, postgres")
    ] = "files"
    ledger: Annotated[str, one_of(("sqlite", "postgres"), "is not a ledger; use sqlite or postgres")] = (
        "sqlite"
    )
    database_url: Text | None = Field(default=None, repr=False, description="a PostgreSQL URL")  # a secret
    durability: Annotated[Durability, one_of(DURABILITY_LEVELS, f"is not a durability; {_DURABILITIES}")] = (
        "normal"
    )
    pool_size: Annotated[StrictInt, between(1, 1000, "an integer")] = 8
    connect_timeout_seconds: Annotated[Seconds, between(0.5, 600)] = 5.0
    statement_timeout_seconds: Annotated[Seconds, between(1, 3600)] = 30.0

    @property
    def workspaces_are_directories(self) -> bool:
        return self.notes == "files"


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@table(frozen=True, slots=True, config=FORBID)
class _Search:
    """`[search]`: what gives search its sense of meaning (`notewarden.embeddings` Rule 1)."""

    provider: Annotated[
        str, one_of(("bundled", "endpoint", "off"), "is not a provider; use bundled, endpoint or off")
    ] = "bundled"
    endpoint_url: WebUrl | None = Field(default=None, description="an http(s) URL ending in /v1/embeddings")
    model: Text | None = Field(default=None, description="the model name the endpoint expects")
    api_key_env: (
        Annotated[
            StrictStr,
            AfterValidator(
                must(lambda v: _ENV_NAME.fullmatch(v), lambda _: "must be an environment variable's name")
            ),
            Field(description="the name of an environment variable holding the API key"),
        ]
        | None
    ) = None
    dimensions: Annotated[StrictInt, between(8, 8192)] | None = Field(
        default=None, description="an integer between 8 and 8192"
    )
    timeout_seconds: Annotated[Seconds, between(1, 600, "a number of seconds")] = 30.0
    batch_size: Annotated[StrictInt, between(1, 2048, "an integer")] = 64
    meaning_weight: Annotated[float, Strict(), between(0.1, 100)] | None = Field(
        default=None, description="a number between 0.1 and 100 (how much meaning weighs against words)"
    )


def parse_search(table: Mapping[str, Any]) -> SearchSettings:
    """The `[search]` table: `provider = "endpoint"` needs `endpoint_url` and `model`; the others none."""
    given = validate_table(_Search, table, "[search]")
    endpoint_keys = ("endpoint_url", "model", "api_key_env", "dimensions")
    if given.provider == "endpoint":
        missing = [k for k in ("endpoint_url", "model") if getattr(given, k) is None]
        if missing:
            raise ConfigError(
                f'[search] provider = "endpoint" needs {" and ".join(missing)}',
                fix='add endpoint_url = "http://127.0.0.1:11434/v1/embeddings" and model = "<its model name>"',
            )
    elif set(table) & set(endpoint_keys):
        raise ConfigError(
            f'[search] {", ".join(sorted(set(table) & set(endpoint_keys)))} only apply to provider = "endpoint"; '
            f"provider is {given.provider!r}"
        )
    return SearchSettings(
        provider=given.provider,  # type: ignore[arg-type]
        endpoint_url=given.endpoint_url,
        model=given.model,
        api_key_env=given.api_key_env,
        dimensions=given.dimensions,
        timeout_seconds=given.timeout_seconds,
        batch_size=given.batch_size,
        meaning_weight=given.meaning_weight,
    )


_SIGNING_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384"})
_SIGNING_ALGORITHMS |= {"ES512", "EdDSA"}


def _asymmetric(algorithms: tuple[str, ...]) -> tuple[str, ...]:
    unknown = sorted(set(algorithms) - _SIGNING_ALGORITHMS)
    if unknown or not algorithms:
        raise ValueError(f"{unknown or '[]'} not allowed; use asymmetric ones: {sorted(_SIGNING_ALGORITHMS)}")
    return algorithms


@table(frozen=True, slots=True, config=FORBID)
class OAuthSettings:
    """Bearer JWTs from one authorization server; `resource` is the audience they must name."""

    resource: WebUrl
    issuer: WebUrl
    authorization_servers: tuple[WebUrl, ...] = Field(default=(), description="a list of http(s) URLs")
    jwks_file: AbsolutePath | None = Field(default=None, description="an absolute path")
    jwks_url: WebUrl | None = Field(default=None, description="an http(s) URL")
    algorithms: Annotated[Texts, AfterValidator(_asymmetric)] = ("RS256", "PS256", "ES256", "ES384", "EdDSA")
    leeway_seconds: Annotated[Seconds, between(0, 300, "a number of seconds")] = 30.0
    connect_client_id: Text | None = Field(default=None, description="a non-empty string")  # sign-in client
    connect_scope: Text = "openid notewarden:read"
    accept_legacy_scopes: Annotated[StrictBool, Field(description="true or false")] = True
    """Tokens with the scopes before rights (notes:read, notes:write, notes:delete): `web.oauth` Rule 3a."""

    def __post_init__(self) -> None:
        if (self.jwks_file is None) == (self.jwks_url is None):
            raise ValueError("needs exactly one of jwks_file (a path) or jwks_url (an https URL)")
        if not self.authorization_servers:
            object.__setattr__(self, "authorization_servers", (self.issuer,))


PerMinute = Annotated[StrictInt, between(1, 100_000, "an integer")]


@table(frozen=True, slots=True, config=FORBID)
class LimitSettings:
    """Calls per rolling minute, per principal and process, by the right the tool needs (`tools.limits`).
    `destructive_per_minute`, the one limit before rights existed, is read as `delete_per_minute`."""

    write_per_minute: PerMinute = 120
    delete_per_minute: PerMinute = 30
    purge_per_minute: PerMinute = 10
    publish_per_minute: PerMinute = 30
    destructive_per_minute: PerMinute | None = Field(
        default=None, description="an integer between 1 and 100000"
    )

    def per_minute(self, right: Right) -> int | None:
        """The limit for tools needing `right`; None: not limited (reading)."""
        if right is Right.DELETE and self.destructive_per_minute is not None:
            return self.destructive_per_minute
        return {
            Right.WRITE: self.write_per_minute,
            Right.DELETE: self.delete_per_minute,
            Right.PURGE: self.purge_per_minute,
            Right.PUBLISH: self.publish_per_minute,
        }.get(right)


@table(frozen=True, slots=True, config=FORBID)
class SandboxSettings:
    enabled: Annotated[StrictBool, Field(description="true or false")] = True
    read_paths: Annotated[tuple[AbsolutePath, ...], Field(description="a list of absolute paths")] = ()


@table(frozen=True, config=FORBID)
class _History:
    max_versions: Annotated[StrictInt, between(1, 10_000, "an integer")] = 50
    max_age_days: Annotated[Seconds, between(1, 36_500, "a number of days")] = 90.0


@table(frozen=True, config=FORBID)
class _Daily:
    folder: String = ""
    format: String = DEFAULT_FORMAT
    template: String = ""


@table(frozen=True, config=FORBID)
class _Workspace:
    uri: Uri
    daily: Annotated[Table, Field(description="a table with folder, format and template")] = None


@table(frozen=True, config=FORBID)
class _File:
    """The top level; each table is checked on its own (so that errors name it), see `parse_config`."""

    state_dir: AbsolutePath | None = Field(default=None, description="an absolute path")
    confirmation_ttl_seconds: Annotated[Seconds, between(1, 86400, "a number of seconds")] = 600.0
    workspace: Tables = ()
    principal: Tables = ()
    stdio: Table = None
    http: Table = None
    oauth: Table = None
    limits: Table = None
    sandbox: Table = None
    publish: Table = None  # publish/config.py checks it
    storage: Table = None
    history: Table = None
    audit: Table = None
    search: Table = None


@table(frozen=True, config=FORBID)
class _Audit:
    retention_days: Annotated[Seconds, between(1, 36_500, "a number of days")] = 365.0


@table(frozen=True, config=FORBID)
class _Stdio:
    principal: Text


@dataclasses.dataclass(frozen=True, slots=True)
class Config:
    state_dir: Path
    workspaces: tuple[FileUri, ...]
    principals: Mapping[str, Principal]
    stdio_principal: str | None = None
    confirmation_ttl_seconds: float = 600.0
    http: HttpSettings = dataclasses.field(default_factory=HttpSettings)
    source: Path | None = None
    oauth: OAuthSettings | None = None
    limits: LimitSettings = dataclasses.field(default_factory=LimitSettings)
    sandbox: SandboxSettings = dataclasses.field(default_factory=SandboxSettings)
    publish: PublishSettings = dataclasses.field(default_factory=PublishSettings)  # see publish/config.py
    storage: StorageSettings = dataclasses.field(default_factory=StorageSettings)
    history: Retention = dataclasses.field(default_factory=Retention)
    audit: RecordRetention = dataclasses.field(default_factory=RecordRetention)
    daily_notes: Mapping[FileUri, DailyNotes] = dataclasses.field(default_factory=dict)  # [workspace.daily]
    search: SearchSettings = dataclasses.field(default_factory=SearchSettings)  # [search], embeddings

    def principal_for_token(self, token: str) -> str | None:
        """The principal whose configured token hash matches `token`, if any."""
        found = self.credential_for_token(token)
        return found[0] if found is not None else None

    def credential_for_token(self, token: str) -> tuple[str, frozenset[Right] | None] | None:
        """The principal a configured token belongs to and the rights it narrows to (None: all of
        the principal's), or None for a token configured nowhere."""
        digest = hashlib.sha256(token.encode()).hexdigest()
        for principal in self.principals.values():
            if digest in principal.tokens:
                return principal.id, principal.tokens[digest]
        return None

    def principal_for_subject(self, subject: str) -> str | None:
        """The principal that lists an OAuth `sub` under `oauth_subjects`, if any."""
        for principal in self.principals.values():
            if subject in principal.oauth_subjects:
                return principal.id
        return None

    def without_grants(self) -> Config:
        """This configuration with no principal: what a file that stopped parsing grants (scope.grants)."""
        return dataclasses.replace(self, principals={})


def default_state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "notewarden"


def config_for_directories(
    directories: list[str], *, state_dir: str | None = None, rights: frozenset[Right] = DEFAULT_RIGHTS
) -> Config:
    """The embedded default: every directory is a workspace granted to principal "local" over stdio,
    with `rights` (the default's unless `serve --rights` says otherwise)."""
    uris = tuple(_workspace_uri_for_dir(d) for d in directories)
    if not uris:
        raise ConfigError("give at least one --workspace DIR, or --config FILE")
    local = Principal(LOCAL_PRINCIPAL, {uri: (FolderRights((), rights),) for uri in uris})
    return Config(
        state_dir=Path(state_dir) if state_dir else default_state_dir(),
        workspaces=uris,
        principals={LOCAL_PRINCIPAL: local},
        stdio_principal=LOCAL_PRINCIPAL,
    )


def load_config(path: str | Path) -> Config:
    """The file parsed and checked; every way it can fail to be read is a `ConfigError` with the fix."""
    path = Path(path)
    try:
        raw = tomllib.loads(read_config_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not valid TOML: {exc}", fix="correct that line (TOML syntax: toml.io)"
        ) from None
    return parse_config(raw, source=path)


def read_config_text(path: Path) -> str:
    """The config file's text; a `ConfigError` with the fix for each way it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"config file {path} does not exist", fix="notewarden init DIR writes one, or pass --config FILE"
        ) from None
    except IsADirectoryError:
        inside = path / "notewarden.toml"
        raise ConfigError(
            f"config file {path} is a folder, not a file",
            fix=f"--config {inside}" if inside.is_file() else "pass the TOML file itself: --config FILE",
        ) from None
    except PermissionError:
        raise ConfigError(
            f"config file {path} is not readable by this user",
            fix=f"run as the user who owns it, or: chmod u+r {path}",
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})",
            fix="save it as UTF-8 (TOML files are UTF-8)",
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"config file {path} cannot be read ({exc.strerror})", fix="check the path and its folder"
        ) from None


def parse_config(raw: Mapping[str, Any], *, source: Path | None = None) -> Config:
    """Each table checked on its own (Rule 1), then the rules that span tables."""
    top = validate_table(_File, raw, "the top level")
    workspaces: list[FileUri] = []
    daily_notes: dict[FileUri, DailyNotes] = {}
    for i, entry in enumerate(top.workspace):
        where = f"[[workspace]] #{i + 1}"
        workspace = validate_table(_Workspace, entry, where)
        uri = workspace.uri
        if workspace.daily is not None:
            daily_notes[uri] = _daily(workspace.daily, f"{where} daily")
        if uri in workspaces:
            raise ConfigError(f"workspace {uri} is listed twice")
        for other in workspaces:
            if uri.relative_to(other) is not None or other.relative_to(uri) is not None:
                raise ConfigError(f"workspaces {other} and {uri} nest; workspaces must not overlap")
        workspaces.append(uri)

    principals: dict[str, Principal] = {}
    for i, entry in enumerate(top.principal):
        principal = _principal(validate_table(PrincipalConfig, entry, f"[[principal]] #{i + 1}"), workspaces)
        if principal.id in principals:
            raise ConfigError(f"principal {principal.id!r} is defined twice")
        principals[principal.id] = principal
    _one_owner(principals, "tokens", "a token hash")
    _one_owner(principals, "oauth_subjects", "the oauth subject {key!r}")

    stdio_principal = None
    if top.stdio is not None:
        stdio_principal = validate_table(_Stdio, top.stdio, "[stdio]").principal
        if stdio_principal not in principals:
            raise ConfigError(f"[stdio] principal {stdio_principal!r} is not a [[principal]]")

    history = validate_table(_History, top.history or {}, "[history]")
    audit = validate_table(_Audit, top.audit or {}, "[audit]")
    return Config(
        state_dir=top.state_dir or default_state_dir(),
        workspaces=tuple(workspaces),
        principals=principals,
        stdio_principal=stdio_principal,
        confirmation_ttl_seconds=top.confirmation_ttl_seconds,
        http=validate_table(HttpSettings, top.http or {}, "[http]"),
        source=source,
        oauth=validate_table(OAuthSettings, top.oauth, "[oauth]") if top.oauth is not None else None,
        limits=validate_table(LimitSettings, top.limits or {}, "[limits]"),
        sandbox=validate_table(SandboxSettings, top.sandbox or {}, "[sandbox]"),
        publish=parse_publish(top.publish),
        storage=parse_storage(top.storage or {}),
        history=Retention(max_versions=history.max_versions, max_age_days=history.max_age_days),
        audit=RecordRetention(retention_days=audit.retention_days),
        daily_notes=daily_notes,
        search=parse_search(top.search or {}),
    )


def _principal(table: PrincipalConfig, workspaces: list[FileUri]) -> Principal:
    """A `[[principal]]` resolved: its `workspaces` (with its `rights`, by default `DEFAULT_RIGHTS`)
    and its `[[principal.grant]]` folders, per workspace; its tokens with the rights they carry."""
    who = f"[[principal]] {table.id!r}"
    listed = ", ".join(map(str, workspaces)) or "none"
    granted: list[tuple[FileUri, frozenset[Right], str]] = [
        (uri, DEFAULT_RIGHTS if table.rights is None else table.rights, f"{who} workspaces")
        for uri in table.workspaces
    ]
    for n, entry in enumerate(table.grant, 1):
        grant = validate_table(_Grant, entry, f"{who} grant #{n}")
        granted.append((grant.uri, grant.rights, f"{who} grant #{n}"))
    grants: dict[FileUri, list[FolderRights]] = {w: [] for w in workspaces}
    seen: set[FileUri] = set()
    for uri, rights, where in granted:
        if uri in seen:
            raise ConfigError(f"{where}: {uri} is granted twice to {table.id!r}; give it one entry")
        seen.add(uri)
        workspace = next((w for w in workspaces if uri.relative_to(w) is not None), None)
        if workspace is None:
            raise ConfigError(
                f"{where}: {uri} is not a [[workspace]] nor a folder inside one; configured workspaces: {listed}"
            )
        grants[workspace].append(FolderRights(uri.relative_to(workspace) or (), rights))
    tokens: dict[str, frozenset[Right] | None] = dict.fromkeys(table.token_sha256)
    for n, entry in enumerate(table.token, 1):
        token = validate_table(_Token, entry, f"{who} token #{n}")
        if token.sha256 in tokens:
            raise ConfigError(f"{who} token #{n}: that token hash is listed twice; give it one entry")
        tokens[token.sha256] = token.rights
    return Principal(
        table.id, {w: tuple(held) for w, held in grants.items() if held}, tokens, table.oauth_subjects
    )


def _one_owner(principals: Mapping[str, Principal], field: str, what: str) -> None:
    """A token hash or an OAuth subject names one principal, or the config is refused."""
    owners: dict[str, str] = {}
    for p in principals.values():
        for key in getattr(p, field):
            if key in owners:
                raise ConfigError(f"principals {owners[key]!r} and {p.id!r} share {what.format(key=key)}")
            owners[key] = p.id


def _daily(table: Mapping[str, Any], where: str) -> DailyNotes:
    """`[workspace.daily]`: paths are checked now, so notes_daily never builds an invalid one."""
    given = validate_table(_Daily, table, where)
    settings = DailyNotes(
        folder=given.folder.strip("/"), format=given.format, template=given.template or None
    )
    sample = datetime.datetime(2026, 12, 31, 23, 59, 58)
    try:
        for path in (settings.note_id(sample.date()), settings.template or "x.md"):
            if any(part.startswith(".") for part in split_relative(path)):
                raise PathRejected(f"{path!r} is hidden: a name starting with '.' is never a note")
    except PathRejected as exc:
        raise ConfigError(
            f"{where} makes paths that are not note paths inside the workspace ({exc}); e.g. format "
            f"{settings.format!r} gives {format_moment(settings.format, sample)!r}"
        ) from None
    return settings


def parse_storage(table: Mapping[str, Any], env: Mapping[str, str] = os.environ) -> StorageSettings:
    """The `[storage]` table; the database URL comes from NOTEWARDEN_DATABASE_URL when set, else the file."""
    given = validate_table(StorageSettings, table, "[storage]")
    notes = given.notes
    ledger = given.ledger if "ledger" in table else _NOTE_STORES[notes][0]
    if ledger not in _NOTE_STORES[notes]:
        raise ConfigError(
            f"[storage] notes = {notes!r} keeps notes in the ledger's database so that a delete and its "
            f"confirmation commit together; it needs ledger = {_NOTE_STORES[notes][0]!r}, not {ledger!r}"
        )
    url = env.get(DATABASE_URL_ENV) or given.database_url
    if ledger == "postgres":
        if not url:
            raise ConfigError(
                f"[storage] uses PostgreSQL but no database URL is set: set {DATABASE_URL_ENV} "
                "(preferred: keeps the password out of the file) or [storage] database_url"
            )
        _check_database_url(url)
    elif given.database_url is not None:
        raise ConfigError("[storage] database_url is set but neither notes nor ledger is postgres")
    return dataclasses.replace(given, ledger=ledger, database_url=url if ledger == "postgres" else None)


def _check_database_url(url: str) -> None:
    """Refuse an unparseable URL without echoing it (it may hold a password)."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        raise ConfigError(
            "PostgreSQL storage needs the postgres extra: pip install 'notewarden[postgres]'"
        ) from None
    try:
        conninfo_to_dict(url)
    except Exception:
        raise ConfigError(
            "the database URL is not a valid PostgreSQL connection string; use "
            "postgresql://USER[:PASSWORD]@HOST[:PORT]/DBNAME or 'host=... dbname=...' key=value pairs"
        ) from None


def _workspace_uri_for_dir(directory: str) -> FileUri:
    path = Path(directory).expanduser()
    if not path.is_dir():
        raise ConfigError(f"workspace directory {directory!r} does not exist or is not a directory")
    return FileUri.from_path(str(path.resolve()))
