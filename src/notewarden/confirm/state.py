"""The plaintext of a confirmation's `requestState`.

Sealing is not done here: the SDK's `RequestStateBoundary` encrypts this text with
AES-256-GCM into every outgoing `input_required` result, and on the retry verifies the
tag, the expiry, the audience, the principal and the request binding (method, tool
name and a digest of the arguments, so a changed `title` or `workspaceUri` cannot reuse
it) before the handler ever sees the plaintext. What this payload adds is the tool's
own binding: the phase, the principal again (checked against the live one), the
workspace and its directory identity, the exact candidate set with each file's
identity, and the random confirmation id the ledger consumes exactly once.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

from notewarden.scope.fsroot import FileIdentity

__all__ = ["Candidate", "ConfirmationState", "InvalidState", "Selection", "new_confirmation_id"]

_VERSION = 1


class InvalidState(Exception):
    """The plaintext is not a state this server version minted for this step."""


def new_confirmation_id() -> str:
    return secrets.token_urlsafe(18)


@dataclass(frozen=True, slots=True)
class Candidate:
    id: str
    title: str
    identity: FileIdentity
    matched: str = ""
    """Which of the note's names matched the query when it is not the title ("file name",
    "alias “…”"), for the form to show; sealed so a form asked again shows it too."""


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
    workspace: str
    workspace_identity: tuple[int, int]
    candidates: tuple[Candidate, ...]
    confirmation_id: str
    issued_at: float
    selection: Selection | None = None

    def candidate(self, note_id: object) -> Candidate | None:
        return next((c for c in self.candidates if c.id == note_id), None)

    def encode(self) -> str:
        payload: dict[str, Any] = {
            "v": _VERSION,
            "phase": self.phase,
            "sub": self.principal,
            "ws": self.workspace,
            "wsid": list(self.workspace_identity),
            "cand": [
                [c.id, c.title, c.identity.dev, c.identity.ino, c.identity.mtime_ns, c.identity.size]
                + ([c.matched] if c.matched else [])
                for c in self.candidates
            ],
            "cid": self.confirmation_id,
            "iat": self.issued_at,
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
            dev, ino = raw["wsid"]
            state = cls(
                phase=_s(raw["phase"]),
                principal=_s(raw["sub"]),
                workspace=_s(raw["ws"]),
                workspace_identity=(_i(dev), _i(ino)),
                candidates=tuple(
                    Candidate(
                        _s(cid),
                        _s(title),
                        FileIdentity(_i(d), _i(n), _i(m), _i(z)),
                        _s(matched[0]) if matched else "",
                    )
                    for cid, title, d, n, m, z, *matched in raw["cand"]
                ),
                confirmation_id=_s(raw["cid"]),
                issued_at=float(raw["iat"]),
                selection=_selection(raw.get("sel")),
            )
        except InvalidState:
            raise
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidState(f"malformed state: {exc.__class__.__name__}") from None
        return state


def _selection(raw: Any) -> Selection | None:
    if raw is None:
        return None
    count, digest, bound = raw
    return Selection(_i(count), _s(digest), float(bound))


def _s(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def _i(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("expected an integer")
    return value
