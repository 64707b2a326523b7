"""Where the request-state sealing keys come from, and how to tell key sets apart. The sealing
itself is the SDK's.

Every instance that should accept another's round-1 state needs the same keys. On one
host they share the state directory, and the first process creates
`<state_dir>/sealing-keys` (mode 0600, created atomically: a racing second process reads
the winner's file). Across hosts, distribute the keys with `NOTEWARDEN_SEALING_KEYS`
(comma-separated hex, at least 32 bytes each). The first key seals; every key unseals,
which is how rotation works (see docs/deployment.md).

A key is named by the SDK's own key id: the 4-byte fingerprint its AES-GCM codec derives from the
key (one-way) and writes, unencrypted, at the front of every sealed token. The start-up log names
the ids of the keys in use and where they came from; when a state fails to open because no key
here has its id, the log names the token's id beside ours (the client still gets only the SDK's
"Invalid or expired requestState").
"""

from __future__ import annotations

import base64
import logging
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp.server.request_state import AESGCMRequestStateCodec, InvalidRequestState

__all__ = [
    "KEYS_ENV",
    "KeyReportingCodec",
    "SealingKeyError",
    "SealingKeys",
    "key_file_problem",
    "key_id",
    "keys_from_env",
    "load_or_create_keys",
    "token_key_id",
]

logger = logging.getLogger(__name__)

KEYS_ENV = "NOTEWARDEN_SEALING_KEYS"
_FILE = "sealing-keys"
_TOKEN_PREFIX = "v1."
_KEY_ID_BYTES = 4


class SealingKeyError(ValueError):
    """What is wrong with the sealing keys and its fix: `serve` says both in one line, `notewarden
    doctor` shows them as its FAIL and its fix (the same words)."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem}; fix: {fix}")
        self.problem = problem
        self.fix = fix


@dataclass(frozen=True, slots=True)
class SealingKeys:
    keys: list[bytes]
    source: str
    """`env NOTEWARDEN_SEALING_KEYS` or `file <path>`."""
    created: bool = False
    """The file was created by this process just now (a key nobody else holds yet)."""

    @property
    def from_file(self) -> bool:
        return self.source.startswith("file ")

    @property
    def key_ids(self) -> list[str]:
        return [key_id(k) for k in self.keys]


def load_or_create_keys(state_dir: Path) -> SealingKeys:
    from_env = keys_from_env()
    if from_env:
        return SealingKeys(from_env, f"env {KEYS_ENV}")
    path = state_dir / _FILE
    created = False
    if not path.exists():
        tmp = state_dir / f".{_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, (secrets.token_hex(32) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
            created = True
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    if (problem := key_file_problem(path)) is not None:
        raise problem
    return SealingKeys(_parse(path.read_text(encoding="ascii"), str(path)), f"file {path}", created)


def key_file_problem(path: Path) -> SealingKeyError | None:
    """A key file other users can read (they could forge confirmations); None when it is fine or absent."""
    if path.exists() and path.stat().st_mode & 0o077:
        return SealingKeyError(f"{path} is readable by other users", f"chmod 600 {path}")
    return None


_KEY_FIX = "each key is 64 hex digits or more, keys separated by commas; openssl rand -hex 32 makes one"


def _parse(text: str, where: str) -> list[bytes]:
    keys = []
    for line in text.split():
        try:
            key = bytes.fromhex(line.strip())
        except ValueError:
            raise SealingKeyError(f"{where}: sealing keys must be hex strings", _KEY_FIX) from None
        if len(key) < 32:
            raise SealingKeyError(f"{where}: each sealing key needs at least 32 bytes", _KEY_FIX)
        keys.append(key)
    if not keys:
        raise SealingKeyError(f"{where}: no sealing key found", _KEY_FIX)
    return keys


def keys_from_env() -> list[bytes] | None:
    """The keys of `NOTEWARDEN_SEALING_KEYS`, None when it is unset (`notewarden doctor` checks them)."""
    from_env = os.environ.get(KEYS_ENV)
    return _parse(from_env.replace(",", "\n"), KEYS_ENV) if from_env else None


def token_key_id(token: str) -> str | None:
    """The key id a sealed token names (the SDK's format: "v1." + base64url(key id, nonce, ...))."""
    if not token.startswith(_TOKEN_PREFIX):
        return None
    body = token[len(_TOKEN_PREFIX) :][:8]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except ValueError:
        return None
    return raw[:_KEY_ID_BYTES].hex() if len(raw) >= _KEY_ID_BYTES else None


def key_id(key: bytes) -> str:
    """The SDK's id for `key`, read from a token it seals (no key material can be recovered from it)."""
    found = token_key_id(AESGCMRequestStateCodec([key]).seal(b""))
    assert found is not None, "the SDK's tokens start with v1. and the key id"
    return found


class KeyReportingCodec:
    """The SDK's AES-GCM codec, logging which key a token needed when none here has its id."""

    def __init__(self, keys: Sequence[bytes]) -> None:
        self._codec = AESGCMRequestStateCodec(keys)
        self._ids = ",".join(key_id(k) for k in keys)

    def seal(self, payload: bytes) -> str:
        return self._codec.seal(payload)

    def unseal(self, token: str) -> bytes:
        try:
            return self._codec.unseal(token)
        except InvalidRequestState as exc:
            if str(exc) == "unknown key":
                logger.warning(
                    "requestState sealed under a key this server does not hold: the instance that issued "
                    "it has other sealing keys; give every instance the same NOTEWARDEN_SEALING_KEYS",
                    extra={
                        "event": "unknown_sealing_key",
                        "token_key_id": token_key_id(token),
                        "key_ids": self._ids,
                    },
                )
            raise
