"""Encryption at rest for target credentials, and sealing for the connect pages' cookies.

Keys are derived with HKDF-SHA256 from the state directory's sealing keys (the same ring
that seals `requestState`, see `sealing.py`), one derived key per purpose, so a credential
key can never open a cookie or a request state and the reverse. The first key seals,
every key opens: rotating the ring rotates these too.

Blob layout: `b"v1" || key-id (4 bytes) || nonce (12) || AES-256-GCM(ciphertext+tag)`; the
associated data binds a credential to its (principal, target), so a row copied to another
principal or target does not open.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Sequence
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = ["Sealer", "credential_sealer", "page_sealer"]

_VERSION = b"v1"


class Sealer:
    """AES-256-GCM under keys derived for one purpose."""

    def __init__(self, keys: Sequence[bytes], purpose: bytes) -> None:
        derived = [
            HKDF(algorithm=SHA256(), length=32, salt=None, info=b"notewarden/" + purpose).derive(k)
            for k in keys
        ]
        self._ring = [(hashlib.sha256(d).digest()[:4], AESGCM(d)) for d in derived]

    def seal(self, plaintext: bytes, associated: bytes) -> bytes:
        key_id, aead = self._ring[0]
        nonce = os.urandom(12)
        return _VERSION + key_id + nonce + aead.encrypt(nonce, plaintext, associated)

    def open(self, blob: bytes, associated: bytes) -> bytes | None:
        """The plaintext, or `None` for anything this ring did not seal for `associated`."""
        if len(blob) < 2 + 4 + 12 + 16 or blob[:2] != _VERSION:
            return None
        key_id, nonce, body = blob[2:6], blob[6:18], blob[18:]
        for candidate_id, aead in self._ring:
            if candidate_id == key_id:
                try:
                    return aead.decrypt(nonce, body, associated)
                except InvalidTag:
                    return None
        return None

    def seal_json(self, value: Any, associated: bytes) -> str:
        plain = json.dumps(value, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(self.seal(plain, associated)).decode().rstrip("=")

    def open_json(self, token: str, associated: bytes) -> Any:
        try:
            blob = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except ValueError:
            return None
        plain = self.open(blob, associated)
        return None if plain is None else json.loads(plain)


def credential_sealer(keys: Sequence[bytes]) -> Sealer:
    return Sealer(keys, b"publish-credential")


def page_sealer(keys: Sequence[bytes]) -> Sealer:
    return Sealer(keys, b"connect-page")


def credential_binding(principal: str, target: str) -> bytes:
    return json.dumps([principal, target]).encode()
