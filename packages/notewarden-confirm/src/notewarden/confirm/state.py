"""The plaintext of a confirmation's `requestState`: what one confirmation is bound to.

Rule 1: sealing is not done here. The SDK's `RequestStateBoundary` encrypts this text with
AES-256-GCM into every outgoing `input_required` result, and on the retry verifies the tag, the
expiry, the audience, the principal and the request binding (method, tool name and a digest of
the arguments) before the handler ever sees the plaintext. This payload binds again what the
confirmation is *for*, so the commit never trusts anything but the sealed plaintext:

    phase       the tool and step that minted it (another tool's state is refused)
    principal   who was asked (checked against the live principal)
    args        a digest of the arguments that decide what is affected
    bound       the caller's own bindings (a workspace, a target), compared with the live ones
    candidates  the exact set the form offered, each with an opaque fingerprint
    selection   or, for a set too large to list, its count, digest and bound
    cid         the random confirmation id the ledger consumes exactly once
    iat, exp    when it was minted and until when it may be answered

Rule 2: a candidate's identity is opaque here: a `fingerprint` string the caller derives from
whatever identifies the thing now (a file's device, inode, mtime and size; a row's id and
version). The caller re-checks it inside the commit's transaction; confirm only carries it.

Rule 3: decoding is strict. Anything that is not exactly a state this code minted for this
phase raises `InvalidState`, whose reason goes to the log only; the wire says "Invalid or
expired requestState" (JSON-RPC -32602), like the SDK's own refusal.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Candidate",
    "ConfirmationState",
    "InvalidState",
    "Selection",
    "arguments_digest",
    "new_confirmation_id",
]

_VERSION = 2


class InvalidState(Exception):
    """The plaintext is not a state this server minted for this step, principal and request."""


def new_confirmation_id() -> str:
    return secrets.token_urlsafe(18)


def arguments_digest(arguments: Mapping[str, Any]) -> str:
    """A digest of the arguments that decide what a confirmation affects (canonical JSON)."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One thing the user may pick: its id (the form's `const`), a title, an opaque fingerprint
    of what it is now, and a detail the form shows after the id ("modified …", "matched …")."""

    id: str
    title: str
    fingerprint: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Selection:
    """A set too large to seal member by member (a trash to empty): how many, a digest of every
    member's id and identity, and the bound that selected it. The commit selects again with the
    bound and must find the same digest, so exactly what the user was shown is affected."""

    count: int
    digest: str
    bound: float


@dataclass(frozen=True, slots=True)
class ConfirmationState:
    phase: str
    principal: str
    arguments: str
    """`arguments_digest` of the arguments that decide what is affected."""
    candidates: tuple[Candidate, ...]
    confirmation_id: str
    issued_at: float
    expires_at: float
    bound: Mapping[str, str] = field(default_factory=dict)
    """Compared with the live values on every later round (e.g. the workspace)."""
    data: Mapping[str, str] = field(default_factory=dict)
    """Carried for the commit only (e.g. the workspace directory's identity)."""
    selection: Selection | None = None

    def candidate(self, candidate_id: object) -> Candidate | None:
        return next((c for c in self.candidates if c.id == candidate_id), None)

    def expired(self, now: float | None = None) -> bool:
        return (time.time() if now is None else now) >= self.expires_at

    def encode(self) -> str:
        payload: dict[str, Any] = {
            "v": _VERSION,
            "phase": self.phase,
            "sub": self.principal,
            "args": self.arguments,
            "cand": [[c.id, c.title, c.fingerprint, c.detail] for c in self.candidates],
            "cid": self.confirmation_id,
            "iat": self.issued_at,
            "exp": self.expires_at,
            "bound": dict(self.bound),
            "data": dict(self.data),
        }
        if self.selection is not None:
            payload["sel"] = [self.selection.count, self.selection.digest, self.selection.bound]
        return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def decode(cls, text: object, *, phase: str) -> ConfirmationState:
        if not isinstance(text, str):
            raise InvalidState("state is not a string")
        try:
            raw: Any = json.loads(text)
            if raw["v"] != _VERSION or raw["phase"] != phase:
                raise InvalidState(f"state is for another step ({raw.get('phase')!r})")
            return cls(
                phase=_s(raw["phase"]),
                principal=_s(raw["sub"]),
                arguments=_s(raw["args"]),
                candidates=tuple(
                    Candidate(_s(cid), _s(title), _s(fingerprint), _s(detail))
                    for cid, title, fingerprint, detail in raw["cand"]
                ),
                confirmation_id=_s(raw["cid"]),
                issued_at=_f(raw["iat"]),
                expires_at=_f(raw["exp"]),
                bound=_strings(raw["bound"]),
                data=_strings(raw["data"]),
                selection=_selection(raw.get("sel")),
            )
        except InvalidState:
            raise
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InvalidState(f"malformed state: {exc.__class__.__name__}") from None


def _selection(raw: Any) -> Selection | None:
    if raw is None:
        return None
    count, digest, bound = raw
    if not isinstance(count, int) or isinstance(count, bool):
        raise TypeError("expected an integer")
    return Selection(count, _s(digest), _f(bound))


def _strings(raw: Any) -> dict[str, str]:
    return {_s(k): _s(v) for k, v in raw.items()}


def _s(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def _f(value: Any) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TypeError("expected a number")
    return float(value)
