"""The connect pages: where a URL-mode elicitation sends the user's browser.

    GET  /connect/{id}             sign-in form; once signed in, what will be connected + credential form
    POST /connect/{id}/sign-in     the same bearer credential the MCP client uses -> the principal
    POST /connect/{id}/credential  store the target's credential (sealed), mark the connection done

Rules:
1. The link grants nothing. The id is a handle, not a secret: every page but the sign-in
   form needs a session cookie minted only after the browser user signed in as the *same
   principal* that started the call. Another principal, an unknown id, and a bad
   credential all get a page that shows nothing about the connection.
2. Forms are protected against cross-site posting: a per-form token bound to a sealed,
   HttpOnly, SameSite=Strict cookie, and a foreign `Origin` / `Sec-Fetch-Site` is refused.
   That covers login CSRF too (a victim signed in as the attacker would store their
   credential under the attacker's principal).
3. A connection completes once; a replayed completion is refused and changes nothing.
   Expired or abandoned links say so, to their owner only.
4. Credentials are never logged, never echoed, never put in a URL.
"""

from __future__ import annotations

import hmac
import html
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from mcp.server.auth.provider import AccessToken
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from notewarden.publish.config import PublishTarget
from notewarden.publish.connections import Completion, ConnectionStatus, PendingConnection
from notewarden.publish.ledger_connections import ConnectionStore
from notewarden.publish.vault import Sealer, page_sealer
from notewarden.services import Services

__all__ = ["connect_routes"]

logger = logging.getLogger(__name__)

TokenVerifier = Callable[[str], Awaitable[AccessToken | None]]
MAX_CREDENTIAL_CHARS = 4096
_PRE_COOKIE = "nw_connect_pre"
_SESSION_COOKIE = "nw_connect_session"
_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # "no-referrer" would make Chromium send Origin: null
}
_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;line-height:1.5}"
    "dl{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem}dt{font-weight:600}"
    "input{font-size:1rem;padding:.4rem;width:100%;box-sizing:border-box}button{font-size:1rem;margin-top:1rem}"
    "code{background:#eee;padding:0 .2rem}"
)


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    document = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)} · notewarden'
        f'</title><meta name="viewport" content="width=device-width"><style>{_STYLE}</style></head>'
        f"<body><h1>{html.escape(title)}</h1>{body}</body></html>"
    )
    return HTMLResponse(document, status_code=status, headers=_HEADERS)


def _not_for_you() -> HTMLResponse:
    return _page(
        "Link not available",
        "<p id=outcome data-outcome=refused>This connect link is not available to you. Nothing was shown or "
        "changed. If you started it, sign in with the same credential your assistant uses.</p>",
        403,
    )


class ConnectPages:
    def __init__(
        self,
        connections: ConnectionStore,
        keys: Sequence[bytes],
        verify_token: TokenVerifier,
        targets: Callable[[], Mapping[str, PublishTarget]],
        ttl: float,
    ) -> None:
        self.connections = connections
        self.targets = targets
        self.sealer: Sealer = page_sealer(keys)
        self.verify_token = verify_token
        self.ttl = ttl

    # --- cookies -------------------------------------------------------------------------

    def _cookie(self, request: Request, name: str, cid: str) -> dict[str, Any] | None:
        token = request.cookies.get(name)
        value = self.sealer.open_json(token, f"{name}|{cid}".encode()) if token else None
        if not isinstance(value, dict) or not isinstance(value.get("exp"), int | float):
            return None
        return value if time.time() < value["exp"] else None

    def _set_cookie(
        self, response: Response, request: Request, name: str, cid: str, value: dict[str, Any]
    ) -> None:
        response.set_cookie(
            name,
            self.sealer.seal_json(value, f"{name}|{cid}".encode()),
            max_age=max(1, int(value["exp"] - time.time())),
            path=f"/connect/{cid}",
            secure=request.url.scheme == "https",
            httponly=True,
            samesite="strict",
        )

    @staticmethod
    def _cross_site(request: Request) -> bool:
        origin = request.headers.get("origin")
        own = f"{request.url.scheme}://{request.url.netloc}"
        if origin is not None and origin != own:
            return True
        return request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none")

    # --- pages ---------------------------------------------------------------------------

    async def show(self, request: Request) -> Response:
        cid = request.path_params["cid"]
        session = self._cookie(request, _SESSION_COOKIE, cid)
        if session is None:
            return self.sign_in_form(request, cid)
        pending = self.connections.get(cid)
        if pending is None or pending.principal != session["sub"]:
            return _not_for_you()
        return self.for_owner(pending, session)

    def sign_in_form(self, request: Request, cid: str, *, problem: str | None = None) -> Response:
        nonce = secrets.token_urlsafe(18)
        note = (
            f"<p id=problem role=alert data-outcome=bad-credential>{html.escape(problem)}</p>"
            if problem
            else ""
        )
        response = _page(
            "Sign in to notewarden",
            f"{note}<p>A tool asked to connect a service to your notewarden account. Sign in with the same "
            "credential your MCP client uses for this server; only then will this page show what will be "
            "connected.</p>"
            f'<form method=post action="/connect/{html.escape(cid)}/sign-in">'
            f'<input type=hidden name=csrf value="{nonce}">'
            "<label for=token>Your notewarden access token</label>"
            "<input id=token name=token type=password autocomplete=off required>"
            "<button id=sign-in type=submit>Sign in</button></form>",
            401 if problem else 200,
        )
        self._set_cookie(response, request, _PRE_COOKIE, cid, {"n": nonce, "exp": time.time() + self.ttl})
        return response

    def for_owner(self, pending: PendingConnection, session: dict[str, Any]) -> Response:
        if pending.status is ConnectionStatus.DONE:
            return _page(
                "Already connected",
                "<p id=outcome data-outcome=already-done>This connection was already completed. Return to "
                "your assistant.</p>",
            )
        if pending.status is ConnectionStatus.ABANDONED or pending.expired():
            return _expired()
        target = self.targets().get(pending.target)
        if target is None:
            return _expired()
        minutes = max(1, int((pending.expires_at - time.time()) // 60))
        return _page(
            f"Connect {target.title}",
            f"<p>Signed in as <strong id=principal>{html.escape(pending.principal)}</strong>.</p>"
            "<p>You are about to let notewarden publish notes on your behalf to:</p><dl>"
            f"<dt>Service</dt><dd id=target-title>{html.escape(target.title)}</dd>"
            f"<dt>Address</dt><dd id=target-url><code>{html.escape(target.url)}</code></dd>"
            f"<dt>Sent as</dt><dd><code>{html.escape(target.auth_description)}</code>, to that address only</dd>"
            f"<dt>For</dt><dd>notewarden principal {html.escape(pending.principal)}</dd>"
            f"<dt>Link expires</dt><dd>in about {minutes} minute(s)</dd></dl>"
            "<p>The credential is stored encrypted on the notewarden server and never passes through "
            "your MCP client or the model.</p>"
            f'<form method=post action="/connect/{html.escape(pending.connection_id)}/credential">'
            f'<input type=hidden name=csrf value="{html.escape(session["csrf"])}">'
            f"<label for=credential>{html.escape(target.title)} credential</label>"
            "<input id=credential name=credential type=password autocomplete=off required>"
            f"<button id=connect type=submit>Connect {html.escape(target.title)}</button></form>",
        )

    async def sign_in(self, request: Request) -> Response:
        cid = request.path_params["cid"]
        if self._cross_site(request):
            return _page("Refused", "<p data-outcome=cross-site>Cross-site form posts are refused.</p>", 403)
        form = await request.form()
        pre = self._cookie(request, _PRE_COOKIE, cid)
        csrf = form.get("csrf")
        if pre is None or not isinstance(csrf, str) or not hmac.compare_digest(csrf, str(pre["n"])):
            return _page(
                "Form expired",
                "<p data-outcome=csrf>This sign-in form expired or did not come from this page. "
                "Reload the page and try again.</p>",
                400,
            )
        token = form.get("token")
        access = await self.verify_token(token.strip()) if isinstance(token, str) and token.strip() else None
        if access is None or not access.subject:
            return self.sign_in_form(request, cid, problem="That access token was not accepted.")
        pending = self.connections.get(cid)
        if pending is None or pending.principal != access.subject:
            logger.warning(
                "connect page: sign-in by a principal that does not own the link",
                extra={"connection": cid[:6], "principal": access.subject},
            )
            return _not_for_you()
        if pending.status is not ConnectionStatus.PENDING or pending.expired():
            return self.for_owner(pending, {})  # done, expired or abandoned: said to the owner only
        response = RedirectResponse(f"/connect/{cid}", status_code=303, headers=_HEADERS)
        session = {"sub": access.subject, "csrf": secrets.token_urlsafe(18), "exp": pending.expires_at}
        self._set_cookie(response, request, _SESSION_COOKIE, cid, session)
        response.delete_cookie(_PRE_COOKIE, path=f"/connect/{cid}")
        return response

    async def store_credential(self, request: Request) -> Response:
        cid = request.path_params["cid"]
        if self._cross_site(request):
            return _page("Refused", "<p data-outcome=cross-site>Cross-site form posts are refused.</p>", 403)
        session = self._cookie(request, _SESSION_COOKIE, cid)
        if session is None:
            return _not_for_you()
        form = await request.form()
        csrf = form.get("csrf")
        if not isinstance(csrf, str) or not hmac.compare_digest(csrf, str(session["csrf"])):
            return _page("Form expired", "<p data-outcome=csrf>Reload the page and try again.</p>", 400)
        credential = form.get("credential")
        text = credential.strip() if isinstance(credential, str) else ""
        if not text or len(text) > MAX_CREDENTIAL_CHARS or any(ord(c) < 32 for c in text):
            return _page(
                "Credential not accepted",
                f"<p data-outcome=bad-input>Enter the credential as one line of at most {MAX_CREDENTIAL_CHARS} "
                "characters. Go back and try again.</p>",
                400,
            )
        outcome = self.connections.complete(cid, str(session["sub"]), text)
        logger.info("connect page: completion", extra={"connection": cid[:6], "outcome": outcome.value})
        if outcome is Completion.COMPLETED:
            return _page(
                "Connected",
                "<p id=outcome data-outcome=completed>Done. Return to your assistant: it can now finish "
                "publishing. You can close this page.</p>",
            )
        if outcome is Completion.ALREADY_DONE:
            return _page(
                "Already connected",
                "<p id=outcome data-outcome=already-done>This connection was already completed; nothing was "
                "changed. Start again from your assistant to replace the credential.</p>",
                409,
            )
        if outcome is Completion.EXPIRED:
            return _expired()
        return _not_for_you()


def _expired() -> HTMLResponse:
    return _page(
        "Link expired",
        "<p id=outcome data-outcome=expired>This connect link has expired or was abandoned; nothing was "
        "stored. Ask your assistant to publish again for a new link.</p>",
        410,
    )


def connect_routes(services: Services, verify_token: TokenVerifier) -> list[Route]:
    """The pages, mounted by `app.build_http_app`; sign-in uses the same verifier as /mcp."""
    if services.connections is None:
        return []
    pages = ConnectPages(
        services.connections,
        services.sealing_keys,
        verify_token,
        lambda: services.grants.config.publish.targets,
        services.config.publish.connect_ttl_seconds,
    )
    return [
        Route("/connect/{cid}", pages.show, methods=["GET"]),
        Route("/connect/{cid}/sign-in", pages.sign_in, methods=["POST"]),
        Route("/connect/{cid}/credential", pages.store_credential, methods=["POST"]),
    ]
