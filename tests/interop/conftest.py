"""The OAuth set-up of tests/wire/test_oauth.py (its signing keys, the real authorization server,
notewarden reading its keys), for the TypeScript clients' step-up tests (test_step_up.py)."""

from tests.wire.test_oauth import authority, keys, oauth  # noqa: F401
