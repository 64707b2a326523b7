"""Configuration: a TOML file, or the `--workspace DIR` shorthand for a local stdio server.

Everything that decides who may touch what comes from here and from the caller's
credentials, never from anything a client says. The file is validated as a whole when
loaded; an error names the key, what was wrong and what is allowed.

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
    workspaces = ["file:///srv/notes/team-a"]
    token_sha256 = ["<hex sha-256 of a bearer token>"]

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

    [limits]
    destructive_per_minute = 30                # calls of destructive tools, per principal and process

    [sandbox]
    enabled = true                             # Landlock self-sandbox at start-up of `serve`

    [history]                                  # saved versions of notes (notes_history, notes_revert)
    max_versions = 50                          # per note, newest kept
    max_age_days = 90                          # older versions go (those of trashed notes stay)

    [storage]                                  # read at start-up; see docs/deployment.md
    notes = "files"                            # "files" (default), "sqlite" or "postgres"
    ledger = "sqlite"                          # "sqlite" (default) or "postgres"
    database_url = "postgresql://notewarden@db.internal/notewarden"  # or NOTEWARDEN_DATABASE_URL
    pool_size = 8
    connect_timeout_seconds = 5
    statement_timeout_seconds = 30
"""

from __future__ import annotations

import datetime
import hashlib
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from notewarden.ledger import DURABILITY_LEVELS, Durability
from notewarden.notes.daily import DailyNotes, format_moment
from notewarden.notes.history import Retention
from notewarden.publish.config import PublishConfigError, PublishSettings, parse_publish
from notewarden.scope.fs_errors import PathRejected
from notewarden.scope.note_paths import split_relative
from notewarden.scope.uri import FileUri, UriError, parse_file_uri

__all__ = [
    "DATABASE_URL_ENV",
    "Config",
    "ConfigError",
    "HttpSettings",
    "LimitSettings",
    "OAuthSettings",
    "PrincipalConfig",
    "SandboxSettings",
    "StorageSettings",
    "default_state_dir",
    "load_config",
]

LOCAL_PRINCIPAL = "local"
DATABASE_URL_ENV = "NOTEWARDEN_DATABASE_URL"
_PRINCIPAL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}")
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


class ConfigError(ValueError):
    """The configuration is invalid; the message names the key and the fix."""


@dataclass(frozen=True, slots=True)
class PrincipalConfig:
    id: str
    workspaces: tuple[FileUri, ...]
    token_sha256: frozenset[str] = frozenset()
    oauth_subjects: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class HttpSettings:
    host: str = "127.0.0.1"
    port: int = 8765
    allowed_origins: tuple[str, ...] = ()
    max_body_bytes: int = 1024 * 1024


@dataclass(frozen=True, slots=True)
class StorageSettings:
    """Where notes and confirmations live. A SQL note store shares the ledger's database, so that a
    delete and its claim are one transaction: notes "sqlite" needs ledger "sqlite", "postgres" needs
    "postgres"; the files store works with either ledger."""

    notes: str = "files"
    ledger: str = "sqlite"
    database_url: str | None = field(default=None, repr=False)  # a secret: never printed or logged
    durability: Durability = "normal"
    pool_size: int = 8
    connect_timeout_seconds: float = 5.0
    statement_timeout_seconds: float = 30.0

    @property
    def workspaces_are_directories(self) -> bool:
        return self.notes == "files"


@dataclass(frozen=True, slots=True)
class OAuthSettings:
    """Bearer JWTs from one authorization server; `resource` is the audience they must name."""

    resource: str
    issuer: str
    authorization_servers: tuple[str, ...]
    jwks_file: Path | None = None
    jwks_url: str | None = None
    algorithms: tuple[str, ...] = ("RS256", "PS256", "ES256", "ES384", "EdDSA")
    leeway_seconds: float = 30.0
    connect_client_id: str | None = None  # the connect pages sign people in with this public client
    connect_scope: str = "openid notes:read"


@dataclass(frozen=True, slots=True)
class LimitSettings:
    destructive_per_minute: int = 30


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    enabled: bool = True
    read_paths: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True)
class Config:
    state_dir: Path
    workspaces: tuple[FileUri, ...]
    principals: Mapping[str, PrincipalConfig]
    stdio_principal: str | None = None
    confirmation_ttl_seconds: float = 600.0
    http: HttpSettings = field(default_factory=HttpSettings)
    source: Path | None = None
    oauth: OAuthSettings | None = None
    limits: LimitSettings = field(default_factory=LimitSettings)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    publish: PublishSettings = field(default_factory=PublishSettings)  # [publish]: see publish/config.py
    storage: StorageSettings = field(default_factory=StorageSettings)
    history: Retention = field(default_factory=Retention)
    daily_notes: Mapping[FileUri, DailyNotes] = field(default_factory=dict)  # [workspace.daily]

    def principal_for_token(self, token: str) -> str | None:
        """The principal whose configured token hash matches `token`, if any."""
        digest = hashlib.sha256(token.encode()).hexdigest()
        for principal in self.principals.values():
            if digest in principal.token_sha256:
                return principal.id
        return None

    def principal_for_subject(self, subject: str) -> str | None:
        """The principal that lists an OAuth `sub` under `oauth_subjects`, if any."""
        for principal in self.principals.values():
            if subject in principal.oauth_subjects:
                return principal.id
        return None


def default_state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "notewarden"


def config_for_directories(directories: list[str], *, state_dir: str | None = None) -> Config:
    """The embedded default: every directory is a workspace granted to principal "local" over stdio."""
    uris = tuple(_workspace_uri_for_dir(d) for d in directories)
    if not uris:
        raise ConfigError("give at least one --workspace DIR, or --config FILE")
    local = PrincipalConfig(id=LOCAL_PRINCIPAL, workspaces=uris)
    return Config(
        state_dir=Path(state_dir) if state_dir else default_state_dir(),
        workspaces=uris,
        principals={LOCAL_PRINCIPAL: local},
        stdio_principal=LOCAL_PRINCIPAL,
    )


def load_config(path: str | Path) -> Config:
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    return parse_config(raw, source=path)


def parse_config(raw: Mapping[str, Any], *, source: Path | None = None) -> Config:
    known = {"state_dir", "confirmation_ttl_seconds", "workspace", "principal", "stdio", "http"}
    known |= {"oauth", "limits", "sandbox", "publish"}
    known |= {"storage", "history"}
    _reject_unknown(raw, known, "the top level")
    state_dir = Path(_str(raw, "state_dir")) if "state_dir" in raw else default_state_dir()
    if not state_dir.is_absolute():
        raise ConfigError(f"state_dir {str(state_dir)!r} must be an absolute path")

    workspaces: list[FileUri] = []
    daily_notes: dict[FileUri, DailyNotes] = {}
    for i, entry in enumerate(_tables(raw, "workspace")):
        _reject_unknown(entry, {"uri", "daily"}, f"[[workspace]] #{i + 1}")
        uri = _uri(_str(entry, "uri", f"[[workspace]] #{i + 1}"), f"[[workspace]] #{i + 1} uri")
        if "daily" in entry:
            daily_notes[uri] = _daily(entry["daily"], f"[[workspace]] #{i + 1} daily")
        if uri in workspaces:
            raise ConfigError(f"workspace {uri} is listed twice")
        for other in workspaces:
            if uri.relative_to(other) is not None or other.relative_to(uri) is not None:
                raise ConfigError(f"workspaces {other} and {uri} nest; workspaces must not overlap")
        workspaces.append(uri)

    principals: dict[str, PrincipalConfig] = {}
    for i, entry in enumerate(_tables(raw, "principal")):
        where = f"[[principal]] #{i + 1}"
        _reject_unknown(entry, {"id", "workspaces", "token_sha256", "oauth_subjects"}, where)
        pid = _str(entry, "id", where)
        if not _PRINCIPAL_ID.fullmatch(pid):
            raise ConfigError(f"{where} id {pid!r} must match {_PRINCIPAL_ID.pattern}")
        if pid in principals:
            raise ConfigError(f"principal {pid!r} is defined twice")
        grants = []
        for text in _str_list(entry, "workspaces", where):
            uri = _uri(text, f"{where} workspaces")
            if uri not in workspaces:
                raise ConfigError(
                    f"principal {pid!r} is granted {uri}, which is not a [[workspace]]; "
                    f"configured workspaces: {', '.join(map(str, workspaces)) or 'none'}"
                )
            grants.append(uri)
        hashes = _str_list(entry, "token_sha256", where) if "token_sha256" in entry else []
        for h in hashes:
            if not _SHA256_HEX.fullmatch(h):
                raise ConfigError(f"{where} token_sha256 entries must be 64 lowercase hex digits")
        subjects = _str_list(entry, "oauth_subjects", where) if "oauth_subjects" in entry else []
        principals[pid] = PrincipalConfig(
            id=pid,
            workspaces=tuple(grants),
            token_sha256=frozenset(hashes),
            oauth_subjects=frozenset(subjects),
        )
    seen: dict[str, str] = {}
    for p in principals.values():
        for h in p.token_sha256:
            if h in seen:
                raise ConfigError(f"principals {seen[h]!r} and {p.id!r} share a token hash")
            seen[h] = p.id
    owners: dict[str, str] = {}
    for p in principals.values():
        for sub in p.oauth_subjects:
            if sub in owners:
                raise ConfigError(f"principals {owners[sub]!r} and {p.id!r} share the oauth subject {sub!r}")
            owners[sub] = p.id

    stdio_principal = None
    if "stdio" in raw:
        stdio = _table(raw, "stdio")
        _reject_unknown(stdio, {"principal"}, "[stdio]")
        stdio_principal = _str(stdio, "principal", "[stdio]")
        if stdio_principal not in principals:
            raise ConfigError(f"[stdio] principal {stdio_principal!r} is not a [[principal]]")

    http = HttpSettings()
    if "http" in raw:
        table = _table(raw, "http")
        _reject_unknown(table, {"host", "port", "allowed_origins", "max_body_bytes"}, "[http]")
        port = table.get("port", http.port)
        body = table.get("max_body_bytes", http.max_body_bytes)
        if not isinstance(port, int) or not 0 <= port <= 65535:
            raise ConfigError("[http] port must be an integer 0-65535")
        if not isinstance(body, int) or body < 1024:
            raise ConfigError("[http] max_body_bytes must be an integer >= 1024")
        http = HttpSettings(
            host=_str(table, "host", "[http]") if "host" in table else http.host,
            port=port,
            allowed_origins=tuple(_str_list(table, "allowed_origins", "[http]"))
            if "allowed_origins" in table
            else (),
            max_body_bytes=body,
        )

    ttl = raw.get("confirmation_ttl_seconds", 600)
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 1 <= ttl <= 86400:
        raise ConfigError("confirmation_ttl_seconds must be a number of seconds between 1 and 86400")

    try:
        publish = parse_publish(raw.get("publish"))
    except PublishConfigError as exc:
        raise ConfigError(str(exc)) from None

    return Config(
        state_dir=state_dir,
        workspaces=tuple(workspaces),
        principals=principals,
        stdio_principal=stdio_principal,
        confirmation_ttl_seconds=float(ttl),
        http=http,
        source=source,
        oauth=_oauth(_table(raw, "oauth")) if "oauth" in raw else None,
        limits=_limits(_table(raw, "limits")) if "limits" in raw else LimitSettings(),
        sandbox=_sandbox(_table(raw, "sandbox")) if "sandbox" in raw else SandboxSettings(),
        publish=publish,
        storage=parse_storage(_table(raw, "storage") if "storage" in raw else {}),
        history=_history(_table(raw, "history")) if "history" in raw else Retention(),
        daily_notes=daily_notes,
    )


def _daily(table: Any, where: str) -> DailyNotes:
    """`[workspace.daily]`: paths are checked now, so notes_daily never builds an invalid one."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table with folder, format and template")
    _reject_unknown(table, {"folder", "format", "template"}, where)
    defaults = DailyNotes()
    for key in table:
        if not isinstance(table[key], str):
            raise ConfigError(f"{key} in {where} must be a string")
    settings = DailyNotes(
        folder=table.get("folder", defaults.folder).strip("/"),
        format=table.get("format", defaults.format),
        template=table.get("template") or None,
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


_SIGNING_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384"})
_SIGNING_ALGORITHMS |= {"ES512", "EdDSA"}


def _oauth(table: Mapping[str, Any]) -> OAuthSettings:
    where = "[oauth]"
    known = {"resource", "issuer", "authorization_servers", "jwks_file", "jwks_url", "algorithms"}
    _reject_unknown(table, known | {"leeway_seconds", "connect_client_id", "connect_scope"}, where)
    resource, issuer = _http_url(table, "resource", where), _http_url(table, "issuer", where)
    if ("jwks_file" in table) == ("jwks_url" in table):
        raise ConfigError("[oauth] needs exactly one of jwks_file (a path) or jwks_url (an https URL)")
    jwks_file = Path(_str(table, "jwks_file", where)) if "jwks_file" in table else None
    if jwks_file is not None and not jwks_file.is_absolute():
        raise ConfigError(f"[oauth] jwks_file {str(jwks_file)!r} must be an absolute path")
    servers = (
        tuple(_str_list(table, "authorization_servers", where)) if "authorization_servers" in table else ()
    )
    defaults = OAuthSettings(resource="", issuer="", authorization_servers=())
    algorithms = (
        tuple(_str_list(table, "algorithms", where)) if "algorithms" in table else defaults.algorithms
    )
    unknown = sorted(set(algorithms) - _SIGNING_ALGORITHMS)
    if unknown or not algorithms:
        raise ConfigError(
            f"[oauth] algorithms {unknown or '[]'} not allowed; use asymmetric ones: {sorted(_SIGNING_ALGORITHMS)}"
        )
    leeway = table.get("leeway_seconds", defaults.leeway_seconds)
    if isinstance(leeway, bool) or not isinstance(leeway, int | float) or not 0 <= leeway <= 300:
        raise ConfigError("[oauth] leeway_seconds must be a number of seconds between 0 and 300")
    for url in servers:
        _http_url({"authorization_servers": url}, "authorization_servers", where)
    return OAuthSettings(
        resource=resource,
        issuer=issuer,
        authorization_servers=servers or (issuer,),
        jwks_file=jwks_file,
        jwks_url=_http_url(table, "jwks_url", where) if "jwks_url" in table else None,
        algorithms=algorithms,
        leeway_seconds=float(leeway),
        connect_client_id=_str(table, "connect_client_id", where) if "connect_client_id" in table else None,
        connect_scope=_str(table, "connect_scope", where)
        if "connect_scope" in table
        else defaults.connect_scope,
    )


def _limits(table: Mapping[str, Any]) -> LimitSettings:
    _reject_unknown(table, {"destructive_per_minute"}, "[limits]")
    per_minute = table.get("destructive_per_minute", LimitSettings().destructive_per_minute)
    if isinstance(per_minute, bool) or not isinstance(per_minute, int) or not 1 <= per_minute <= 100_000:
        raise ConfigError("[limits] destructive_per_minute must be an integer between 1 and 100000")
    return LimitSettings(destructive_per_minute=per_minute)


def _history(table: Mapping[str, Any]) -> Retention:
    _reject_unknown(table, {"max_versions", "max_age_days"}, "[history]")
    versions = table.get("max_versions", Retention().max_versions)
    days = table.get("max_age_days", Retention().max_age_days)
    if isinstance(versions, bool) or not isinstance(versions, int) or not 1 <= versions <= 10_000:
        raise ConfigError(
            "[history] max_versions must be an integer between 1 and 10000 (versions kept per note)"
        )
    if isinstance(days, bool) or not isinstance(days, int | float) or not 1 <= days <= 36_500:
        raise ConfigError("[history] max_age_days must be a number of days between 1 and 36500")
    return Retention(max_versions=versions, max_age_days=float(days))


def _sandbox(table: Mapping[str, Any]) -> SandboxSettings:
    _reject_unknown(table, {"enabled", "read_paths"}, "[sandbox]")
    enabled = table.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError("[sandbox] enabled must be true or false")
    paths = (
        tuple(Path(p) for p in _str_list(table, "read_paths", "[sandbox]")) if "read_paths" in table else ()
    )
    for path in paths:
        if not path.is_absolute():
            raise ConfigError(f"[sandbox] read_paths entry {str(path)!r} must be an absolute path")
    return SandboxSettings(enabled=enabled, read_paths=paths)


def _http_url(table: Mapping[str, Any], key: str, where: str) -> str:
    value = _str(table, key, where)
    parsed = urlsplit(value)
    if parsed.scheme not in ("https", "http") or not parsed.netloc or parsed.fragment or parsed.query:
        raise ConfigError(f"{key} in {where} must be an http(s) URL without query or fragment, got {value!r}")
    return value


_NOTE_STORES = {"files": ("sqlite", "postgres"), "sqlite": ("sqlite",), "postgres": ("postgres",)}
"""Each note store and the ledgers it can share a transaction with (the first is the default)."""


def parse_storage(table: Mapping[str, Any], env: Mapping[str, str] = os.environ) -> StorageSettings:
    """The `[storage]` table; the database URL comes from NOTEWARDEN_DATABASE_URL when set, else the file."""
    known = {
        "notes",
        "ledger",
        "database_url",
        "durability",
        "pool_size",
        "connect_timeout_seconds",
        "statement_timeout_seconds",
    }
    _reject_unknown(table, known, "[storage]")
    notes = table.get("notes", "files")
    if notes not in _NOTE_STORES:
        raise ConfigError(
            f"[storage] notes = {notes!r} is not a note store; use one of files, sqlite, postgres"
        )
    ledger = table.get("ledger", _NOTE_STORES[notes][0])
    if ledger not in ("sqlite", "postgres"):
        raise ConfigError(f"[storage] ledger = {ledger!r} is not a ledger; use sqlite or postgres")
    if ledger not in _NOTE_STORES[notes]:
        raise ConfigError(
            f"[storage] notes = {notes!r} keeps notes in the ledger's database so that a delete and its "
            f"confirmation commit together; it needs ledger = {_NOTE_STORES[notes][0]!r}, not {ledger!r}"
        )
    url = env.get(DATABASE_URL_ENV) or (
        _str(table, "database_url", "[storage]") if "database_url" in table else None
    )
    if ledger == "postgres":
        if not url:
            raise ConfigError(
                f"[storage] uses PostgreSQL but no database URL is set: set {DATABASE_URL_ENV} "
                "(preferred: keeps the password out of the file) or [storage] database_url"
            )
        _check_database_url(url)
    elif "database_url" in table:
        raise ConfigError("[storage] database_url is set but neither notes nor ledger is postgres")
    durability = table.get("durability", "normal")
    if durability not in DURABILITY_LEVELS:
        raise ConfigError(
            f'[storage] durability = {durability!r}: use "normal" (survives a killed process) or '
            '"full" (also survives power loss, one fsync per step)'
        )
    numbers = {
        "pool_size": (1, 1000),
        "connect_timeout_seconds": (0.5, 600),
        "statement_timeout_seconds": (1, 3600),
    }
    defaults, values = StorageSettings(), {}
    for key, (low, high) in numbers.items():
        value = table.get(key, getattr(defaults, key))
        if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
            raise ConfigError(f"[storage] {key} must be a number between {low:g} and {high:g}")
        values[key] = value
    return StorageSettings(
        notes=notes,
        ledger=ledger,
        database_url=url if ledger == "postgres" else None,
        durability=durability,
        pool_size=int(values["pool_size"]),
        connect_timeout_seconds=float(values["connect_timeout_seconds"]),
        statement_timeout_seconds=float(values["statement_timeout_seconds"]),
    )


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


def _uri(text: str, where: str) -> FileUri:
    try:
        return parse_file_uri(text)
    except UriError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _reject_unknown(table: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(
            f"unknown key(s) {', '.join(unknown)} in {where}; allowed: {', '.join(sorted(known))}"
        )


def _str(table: Mapping[str, Any], key: str, where: str = "the top level") -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{key} in {where} must be a non-empty string")
    return value


def _str_list(table: Mapping[str, Any], key: str, where: str) -> list[str]:
    value = table.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{key} in {where} must be a list of non-empty strings")
    return list(value)


def _table(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = raw[key]
    if not isinstance(value, dict):
        raise ConfigError(f"[{key}] must be a table")
    return value


def _tables(raw: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ConfigError(f"[[{key}]] must be an array of tables")
    return value
