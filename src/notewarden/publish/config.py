"""The `[publish]` configuration: where browsers reach the connect pages, and the targets.

    [publish]
    page_url = "https://notes.example.com"   # default: http://<[http] host>:<[http] port>
    connect_ttl_seconds = 600                # how long a connect link stays usable

    [[publish.target]]
    id = "team-blog"
    title = "Team blog"
    url = "https://blog.example.com/api/notes"
    auth = "bearer"                          # Authorization: Bearer <credential>
                                             # or "header:X-Api-Key" -> X-Api-Key: <credential>

Rule 1: every URL here is HTTPS, or plain HTTP to a loopback address (development and tests);
none carries user info, a query or a fragment. An error quotes a URL only when it has no user info
(which may hold a password).
Rule 2: the tables are checked as `toml_tables` Rule 1 says; errors are `ConfigError`s.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, StrictStr
from pydantic.dataclasses import dataclass as table

from notewarden.toml_tables import FORBID, ConfigError, Seconds, Tables, between, must, validate_table

__all__ = ["PublishSettings", "PublishTarget", "check_web_url", "parse_publish"]

_TARGET_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_AUTH = re.compile(r"bearer|header:[A-Za-z0-9][A-Za-z0-9-]{0,63}")


@dataclass(frozen=True, slots=True)
class PublishTarget:
    id: str
    title: str
    url: str
    header: str = "Authorization"
    scheme: str | None = "Bearer"

    def auth_headers(self, credential: str) -> dict[str, str]:
        return {self.header: f"{self.scheme} {credential}" if self.scheme else credential}

    @property
    def auth_description(self) -> str:
        return f"{self.header}: {self.scheme} <credential>" if self.scheme else f"{self.header}: <credential>"


@dataclass(frozen=True, slots=True)
class PublishSettings:
    page_url: str | None = None
    connect_ttl_seconds: float = 600.0
    targets: Mapping[str, PublishTarget] = field(default_factory=dict)

    def page_base(self, host: str, port: int) -> str:
        """The origin browsers use for the connect pages (no trailing slash)."""
        if self.page_url is not None:
            return self.page_url.rstrip("/")
        shown = f"[{host}]" if ":" in host else host
        return check_web_url(f"http://{shown}:{port}", "[publish] page_url (derived from [http])").rstrip("/")


def _web_url(url: str) -> str:
    """`url` if Rule 1 allows it, else a ValueError saying why."""
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry user info: give the credential when connecting, not in the URL")
    if parts.query or parts.fragment:
        raise ValueError(f"{url!r} must not carry a query or a fragment")
    if parts.hostname and (
        parts.scheme == "https" or (parts.scheme == "http" and _is_loopback(parts.hostname))
    ):
        return url
    raise ValueError(
        f"{url!r} must be https://, or http:// to a loopback address (127.0.0.1, ::1, localhost)"
    )


def check_web_url(url: str, where: str) -> str:
    try:
        return _web_url(url)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


WebUrl = Annotated[StrictStr, AfterValidator(_web_url), Field(description="an https:// URL")]
Origin = Annotated[
    WebUrl,
    AfterValidator(
        must(
            lambda url: urlsplit(url).path in ("", "/"),
            lambda _: "must be an origin (no path): the pages live at /connect/",
        )
    ),
]


@table(frozen=True, config=FORBID)
class _PublishTable:
    page_url: Origin | None = Field(default=None, description="an https:// origin")
    connect_ttl_seconds: Annotated[Seconds, between(1, 86400, "a number of seconds")] = 600.0
    target: Tables = ()


@table(frozen=True, config=FORBID)
class _TargetTable:
    id: Annotated[
        StrictStr,
        AfterValidator(must(_TARGET_ID.fullmatch, lambda v: f"{v!r} must match {_TARGET_ID.pattern}")),
        Field(description="a target id"),
    ]
    url: WebUrl
    auth: Annotated[
        StrictStr,
        AfterValidator(must(_AUTH.fullmatch, lambda _: "must be 'bearer' or 'header:<Header-Name>'")),
        Field(description="'bearer' or 'header:<Header-Name>'"),
    ]
    title: Annotated[StrictStr, AfterValidator(must(str.strip, lambda _: "must not be blank"))] | None = (
        Field(default=None, description="a non-empty string")
    )


def parse_publish(raw: Mapping[str, Any] | None) -> PublishSettings:
    """Parse the `[publish]` table; errors name the key and what is allowed."""
    if raw is None:
        return PublishSettings()
    publish = validate_table(_PublishTable, raw, "[publish]")
    targets: dict[str, PublishTarget] = {}
    for i, entry in enumerate(publish.target):
        target = validate_table(_TargetTable, entry, f"[[publish.target]] #{i + 1}")
        if target.id in targets:
            raise ConfigError(f"publish target {target.id!r} is defined twice")
        bearer = target.auth == "bearer"
        targets[target.id] = PublishTarget(
            id=target.id,
            title=target.title or target.id,
            url=target.url,
            header="Authorization" if bearer else target.auth.removeprefix("header:"),
            scheme="Bearer" if bearer else None,
        )
    return PublishSettings(
        page_url=publish.page_url, connect_ttl_seconds=publish.connect_ttl_seconds, targets=targets
    )
