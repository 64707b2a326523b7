"""Where the request-state sealing keys come from. The sealing itself is the SDK's.

Every instance that should accept another's round-1 state needs the same keys. On one
host they share the state directory, and the first process creates
`<state_dir>/sealing-keys` (mode 0600, created atomically: a racing second process reads
the winner's file). Across hosts, distribute the keys with `NOTEWARDEN_SEALING_KEYS`
(comma-separated hex, at least 32 bytes each). The first key seals; every key unseals,
which is how rotation works (see docs/deployment.md).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

__all__ = ["KEYS_ENV", "SealingKeyError", "keys_from_env", "load_or_create_keys"]

KEYS_ENV = "NOTEWARDEN_SEALING_KEYS"
_FILE = "sealing-keys"


class SealingKeyError(ValueError):
    pass


def load_or_create_keys(state_dir: Path) -> list[bytes]:
    from_env = os.environ.get(KEYS_ENV)
    if from_env:
        return _parse(from_env.replace(",", "\n"), KEYS_ENV)
    path = state_dir / _FILE
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
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    if path.stat().st_mode & 0o077:
        raise SealingKeyError(f"{path} is readable by other users; chmod 600 it")
    return _parse(path.read_text(encoding="ascii"), str(path))


def _parse(text: str, where: str) -> list[bytes]:
    keys = []
    for line in text.split():
        try:
            key = bytes.fromhex(line.strip())
        except ValueError:
            raise SealingKeyError(f"{where}: sealing keys must be hex strings") from None
        if len(key) < 32:
            raise SealingKeyError(f"{where}: each sealing key needs at least 32 bytes (64 hex digits)")
        keys.append(key)
    if not keys:
        raise SealingKeyError(f"{where}: no sealing key found")
    return keys


def keys_from_env() -> list[bytes] | None:
    """The keys of `NOTEWARDEN_SEALING_KEYS`, None when it is unset (`notewarden doctor` checks them)."""
    from_env = os.environ.get(KEYS_ENV)
    return _parse(from_env.replace(",", "\n"), KEYS_ENV) if from_env else None
