"""Send one note to a publish target: the only place a stored credential is used.

The request is `POST <target url>` with a JSON body `{noteId, title, markdown}`, the
target's auth header, and `Idempotency-Key` (the confirmation id, or a fresh one): a target
that honours it turns a retried delivery into one publication. Redirects are not followed
(a credential must not travel to another URL). The request is asynchronous (a stalled target holds
no thread) and has one deadline for the whole exchange, `DEADLINE_SECONDS`: a target that drips
its answer byte by byte is abandoned as surely as one that never answers.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import anyio
import httpx2

from notewarden.publish.config import PublishTarget

__all__ = ["CredentialRejected", "Delivery", "DeliveryFailed", "send_note"]

TIMEOUT_SECONDS = 10.0
"""Connect, and each read or write."""
DEADLINE_SECONDS = 30.0
"""The whole exchange; `notes_publish`'s lease on a confirmation outlasts it (`ledger.pending`)."""


class DeliveryFailed(Exception):
    """The target did not accept the note; nothing was published."""


class CredentialRejected(DeliveryFailed):
    """The target answered 401/403: the stored credential is wrong or revoked."""


@dataclass(frozen=True, slots=True)
class Delivery:
    status: int
    location: str | None


async def send_note(
    target: PublishTarget,
    credential: str,
    *,
    note_id: str,
    title: str,
    markdown: str,
    idempotency_key: str | None = None,
) -> Delivery:
    headers = {
        **target.auth_headers(credential),
        "Idempotency-Key": idempotency_key or secrets.token_urlsafe(18),
        "User-Agent": "notewarden-publish/1",
    }
    try:
        with anyio.fail_after(DEADLINE_SECONDS):
            async with httpx2.AsyncClient(
                timeout=TIMEOUT_SECONDS, follow_redirects=False, trust_env=False
            ) as http:
                response = await http.post(
                    target.url,
                    json={"noteId": note_id, "title": title, "markdown": markdown},
                    headers=headers,
                )
    except httpx2.HTTPError as exc:
        raise DeliveryFailed(f"{target.title} could not be reached ({exc.__class__.__name__})") from None
    except TimeoutError:
        raise DeliveryFailed(f"{target.title} did not answer within {DEADLINE_SECONDS:g} s") from None
    if response.status_code in (401, 403):
        raise CredentialRejected(
            f"{target.title} refused the stored credential (HTTP {response.status_code})"
        )
    if not 200 <= response.status_code < 300:
        raise DeliveryFailed(f"{target.title} answered HTTP {response.status_code}")
    return Delivery(response.status_code, response.headers.get("location"))
