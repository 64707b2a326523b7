"""Test-only HTTP entry for the official MCP conformance suite. Never a deployment.

    NOTEWARDEN_CONFORMANCE_TOKEN=<token> \\
        python tests/conformance/serve.py --config FILE --port N [--shipped]

Serves notewarden's real Streamable HTTP application, `build_http_app(services, tools=...)`,
with the shipped tools (`default_tools`) plus the test-only fixtures of
`tests/conformance/fixtures.py`, under uvicorn on 127.0.0.1 only. With `--shipped` it serves
`build_http_app(services)` exactly as `notewarden serve --transport http` builds it: no test
tool, no test prompt, resource or completion, no diagnostic hook (the scenarios a notes server
can meet run against that; tests/conformance/README.md).

The relay. The conformance CLI sends no credentials, while notewarden authenticates every
request with a bearer token. The application is therefore wrapped in a small ASGI
middleware that adds `Authorization: Bearer $NOTEWARDEN_CONFORMANCE_TOKEN` to a request
that carries no Authorization header (a request that carries one is passed through
untouched, so a wrong token still gets 401). The token must be one whose SHA-256 the
config lists under a principal; everything after the relay (token verification, principal
resolution, Host/Origin validation, `requestState` sealing bound to that principal) is the
shipped code path. The shipped server (`notewarden serve --transport http`) has no relay
and stays authenticated: an unauthenticated request gets 401.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

TOKEN_ENV = "NOTEWARDEN_CONFORMANCE_TOKEN"

# `python tests/conformance/serve.py` puts tests/conformance on sys.path, not the repo root.
_REPO = Path(__file__).resolve().parents[2]
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

from tests.conformance.fixtures import LIVE, fixture_tools, install_fixture_features  # noqa: E402

from notewarden.app import build_http_app, default_tools  # noqa: E402
from notewarden.config import load_config  # noqa: E402
from notewarden.logs import configure_logging  # noqa: E402
from notewarden.services import open_services  # noqa: E402

Scope = dict[str, Any]


class BearerRelay:
    """ASGI wrapper: give a credential-less HTTP request the configured bearer token."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.header = (b"authorization", b"Bearer " + token.encode("ascii"))

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not any(name == b"authorization" for name, _ in scope["headers"]):
            scope = {**scope, "headers": [*scope["headers"], self.header]}
        await self.app(scope, receive, send)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="notewarden TOML config")
    parser.add_argument("--port", type=int, required=True, help="port on 127.0.0.1")
    parser.add_argument(
        "--shipped", action="store_true", help="the shipped app only, without any conformance fixture"
    )
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)

    token = os.environ.get(TOKEN_ENV, "")
    if not token:
        parser.error(f"set {TOKEN_ENV} to a bearer token whose sha256 the config lists under a principal")
    configure_logging(args.log_level)
    config = load_config(args.config)
    if config.principal_for_token(token) is None:
        parser.error(f"{TOKEN_ENV} is not a token of any principal in {args.config}")

    import uvicorn

    services = open_services(config)
    try:
        if args.shipped:
            app = build_http_app(services)
        else:
            tools = [*default_tools(services), *fixture_tools()]
            app = build_http_app(services, tools=tools, configure_server=install_fixture_features)
            LIVE.append(app.state.live)  # test_trigger_*_change announce list changes on its streams
        uvicorn.run(
            BearerRelay(app, token),
            host="127.0.0.1",
            port=args.port,
            log_config=None,
            access_log=False,
            lifespan="on",
        )
    finally:
        services.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
