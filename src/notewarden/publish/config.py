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

Rule: every URL here is HTTPS, or plain HTTP to a loopback address (development and tests);
none carries user info, a query or a fragment.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

__all__ = ["PublishConfigError", "PublishSettings", "PublishTarget", "check_web_url", "parse_publish"]

_TARGET_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_HEADER = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,63}")


class PublishConfigError(ValueError):
    pass


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


def check_web_url(url: str, where: str) -> str:
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        raise PublishConfigError(f"{where} {url!r} must not carry user info, a query or a fragment")
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname and _is_loopback(parts.hostname):
        return url
    raise PublishConfigError(
        f"{where} {url!r} must be https://, or http:// to a loopback address (127.0.0.1, ::1, localhost)"
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_publish(raw: Any) -> PublishSettings:
    """Parse the `[publish]` table; errors name the key and what is allowed."""
    if raw is None:
        return PublishSettings()
    if not isinstance(raw, Mapping):
        raise PublishConfigError("[publish] must be a table")
    unknown = sorted(set(raw) - {"page_url", "connect_ttl_seconds", "target"})
    if unknown:
        raise PublishConfigError(
            f"unknown key(s) {', '.join(unknown)} in [publish]; allowed: connect_ttl_seconds, page_url, target"
        )
    page_url = raw.get("page_url")
    if page_url is not None:
        if not isinstance(page_url, str):
            raise PublishConfigError("[publish] page_url must be a string")
        check_web_url(page_url, "[publish] page_url")
        if urlsplit(page_url).path not in ("", "/"):
            raise PublishConfigError(
                "[publish] page_url must be an origin (no path): the pages live at /connect/"
            )
    ttl = raw.get("connect_ttl_seconds", 600)
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 1 <= ttl <= 86400:
        raise PublishConfigError(
            "[publish] connect_ttl_seconds must be a number of seconds between 1 and 86400"
        )
    entries = raw.get("target", [])
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        raise PublishConfigError("[[publish.target]] must be an array of tables")
    targets: dict[str, PublishTarget] = {}
    for i, entry in enumerate(entries):
        _add_target(targets, _parse_target(entry, f"[[publish.target]] #{i + 1}"))
    return PublishSettings(page_url=page_url, connect_ttl_seconds=float(ttl), targets=targets)


def _add_target(targets: dict[str, PublishTarget], target: PublishTarget) -> None:
    if target.id in targets:
        raise PublishConfigError(f"publish target {target.id!r} is defined twice")
    targets[target.id] = target


def _parse_target(entry: Mapping[str, Any], where: str) -> PublishTarget:
    unknown = sorted(set(entry) - {"id", "title", "url", "auth"})
    if unknown:
        raise PublishConfigError(
            f"unknown key(s) {', '.join(unknown)} in {where}; allowed: auth, id, title, url"
        )
    values = {k: entry.get(k) for k in ("id", "url", "auth")}
    for key, value in values.items():
        if not isinstance(value, str) or not value:
            raise PublishConfigError(f"{key} in {where} must be a non-empty string")
    target_id, url, auth = str(values["id"]), str(values["url"]), str(values["auth"])
    if not _TARGET_ID.fullmatch(target_id):
        raise PublishConfigError(f"{where} id {target_id!r} must match {_TARGET_ID.pattern}")
    check_web_url(url, f"{where} url")
    title = entry.get("title", target_id)
    if not isinstance(title, str) or not title.strip():
        raise PublishConfigError(f"title in {where} must be a non-empty string")
    if auth == "bearer":
        return PublishTarget(id=target_id, title=title, url=url)
    header = auth.removeprefix("header:")
    if auth.startswith("header:") and _HEADER.fullmatch(header):
        return PublishTarget(id=target_id, title=title, url=url, header=header, scheme=None)
    raise PublishConfigError(f"auth in {where} must be 'bearer' or 'header:<Header-Name>', got {auth!r}")
