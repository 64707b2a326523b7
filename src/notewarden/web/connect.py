"""The connect pages: where a URL-mode elicitation sends the user's browser.

    GET  /connect/{id}             sign-in; once signed in: who asked, what will be connected and sent
    POST /connect/{id}/sign-in     the same bearer credential the MCP client uses -> the principal
    GET  /connect/{id}/oauth       with [oauth] connect_client_id: sign in at the authorization server
    GET  /connect/oauth/callback   its redirect back (authorization code + PKCE) -> the principal
    POST /connect/{id}/credential  store the target's credential (sealed), mark the connection done
    POST /connect/{id}/decline     "Don't connect": the link stops working, the client's retry declines

Rules:
1. The link grants nothing. The id is a handle, not a secret: every page but the sign-in
   form needs a session cookie minted only after the browser user signed in as the *same
   principal* that started the call. Another principal, an unknown id, and a bad
   credential all get a page that shows nothing about the connection. An id outside its
   alphabet is refused before it is used anywhere (a cookie `Path`, a query).
2. Forms are protected against cross-site posting: a per-form token bound to a sealed,
   HttpOnly, SameSite=Strict cookie, and a foreign `Origin` / `Sec-Fetch-Site` is refused.
   That covers login CSRF too (a victim signed in as the attacker would store their
   credential under the attacker's principal). The OAuth sign-in binds `state` and the PKCE
   verifier to a sealed cookie of the browser that started it.
3. A connection completes once; a replayed completion is refused and changes nothing.
   Expired, declined or abandoned links say so, to their owner only.
4. Credentials are never logged, never echoed, never put in a URL.
5. Sign-in maps to a principal exactly as a bearer token on /mcp does (`BearerVerifier`):
   a static development token typed in, or, with OAuth, the access token the authorization
   server issues for this resource (its `sub` through `oauth_subjects`). Nobody pastes a token.
6. What the page shows comes from the server's own record and config, every name through
   `display.visible`; the client's name is what it calls itself and is labelled so. One
   stylesheet (web/pages/connect.css, allowed by its hash), no JavaScript. The record's
   SQLite reads and writes run in worker threads, never on the event loop.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from importlib.resources import files
from typing import Any

import anyio.to_thread
from mcp.server.auth.provider import AccessToken
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from notewarden.config import OAuthSettings
from notewarden.display import visible, visible_line
from notewarden.publish.config import PublishTarget
from notewarden.publish.connections import Completion, Connections, ConnectionStatus, PendingConnection
from notewarden.publish.vault import Sealer, page_sealer
from notewarden.services import Services
from notewarden.web.signin import AuthorizationServer, SignInFailed

__all__ = ["CONNECTION_ID", "connect_routes"]

SDK_DEFAULT_CLIENT_NAMES = {"mcp": "the Python SDK's default name, “mcp”"}
"""`clientInfo` names an SDK fills in when the app gives none: shown as what they are, not as a name."""

logger = logging.getLogger(__name__)

TokenVerifier = Callable[[str], Awaitable[AccessToken | None]]
MAX_CREDENTIAL_CHARS = 4096
CONNECTION_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")
"""The alphabet and length of `secrets.token_urlsafe` ids (Rule 1)."""
_PRE_COOKIE = "nw_connect_pre"
_SESSION_COOKIE = "nw_connect_session"
_OAUTH_COOKIE = "nw_connect_oauth"
CALLBACK_PATH = "/connect/oauth/callback"
_STYLE = files("notewarden.web").joinpath("pages/connect.css").read_text(encoding="utf-8")
_STYLE_HASH = base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()
_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # "no-referrer" would make Chromium send Origin: null
}


def _e(text: str) -> str:
    """Rule 6: a name from the record or config, made visible and HTML-escaped."""
    return html.escape(visible(text))


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    document = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)} · notewarden'
        f'</title><meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="color-scheme" content="light dark"><style>{_STYLE}</style></head>'
        f'<body><main><header class="brand">notewarden</header><h1>{_e(title)}</h1>{body}</main></body></html>'
    )
    return HTMLResponse(document, status_code=status, headers=_HEADERS)


def _not_for_you() -> HTMLResponse:
    return _page(
        "Link not available",
        "<p id=outcome class=alert data-outcome=refused>This connect link is not available to you. Nothing was "
        "shown or changed.</p><p>If you started it, sign in as the same account your assistant uses.</p>",
        403,
    )


def _no_such_link() -> HTMLResponse:
    return _page(
        "No such link",
        "<p id=outcome class=alert data-outcome=refused>This is not a notewarden connect link. Check the "
        "address your assistant showed.</p>",
        404,
    )


def _expired() -> HTMLResponse:
    return _page(
        "Link expired",
        "<p id=outcome class=alert data-outcome=expired>This connect link has expired or was closed; nothing "
        "was stored. Ask your assistant to publish again for a new link.</p>",
        410,
    )


def _declined() -> HTMLResponse:
    return _page(
        "Not connected",
        "<p id=outcome class=done data-outcome=declined>Nothing was connected and nothing will be sent. "
        "Return to your assistant: it will see that you declined. You can close this page.</p>",
    )


def in_words(seconds: float) -> str:
    """'in 9 minutes', 'in 1 minute', 'in less than a minute', 'in 2 hours'."""
    minutes = int(seconds // 60)
    if minutes < 1:
        return "in less than a minute"
    if minutes < 120:
        return f"in {minutes} minute{'s' if minutes != 1 else ''}"
    return f"in {minutes // 60} hours"


class ConnectPages:
    def __init__(
        self,
        connections: Connections,
        keys: Sequence[bytes],
        verify_token: TokenVerifier,
        targets: Callable[[], Mapping[str, PublishTarget]],
        ttl: float,
        oauth: OAuthSettings | None = None,
    ) -> None:
        self.connections = connections
        self.targets = targets
        self.sealer: Sealer = page_sealer(keys)
        self.verify_token = verify_token
        self.ttl = ttl
        self.authorization = (
            AuthorizationServer(oauth) if oauth is not None and oauth.connect_client_id else None
        )

    # --- the record, off the event loop (Rule 6) --------------------------------------------

    async def _get(self, cid: str) -> PendingConnection | None:
        return await anyio.to_thread.run_sync(self.connections.get, cid)

    # --- cookies -------------------------------------------------------------------------

    def _cookie(self, request: Request, name: str, cid: str) -> dict[str, Any] | None:
        token = request.cookies.get(name)
        value = self.sealer.open_json(token, f"{name}|{cid}".encode()) if token else None
        if not isinstance(value, dict) or not isinstance(value.get("exp"), int | float):
            return None
        return value if time.time() < value["exp"] else None

    def _set_cookie(
        self,
        response: Response,
        request: Request,
        name: str,
        cid: str,
        value: dict[str, Any],
        *,
        path: str | None = None,
        samesite: str = "strict",
    ) -> None:
        assert CONNECTION_ID.fullmatch(cid) or cid == "", "Rule 1: checked by every handler"
        response.set_cookie(
            name,
            self.sealer.seal_json(value, f"{name}|{cid}".encode()),
            max_age=max(1, int(value["exp"] - time.time())),
            path=path or f"/connect/{cid}",
            secure=request.url.scheme == "https",
            httponly=True,
            samesite=samesite,  # type: ignore[arg-type]
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
        if not CONNECTION_ID.fullmatch(cid):
            return _no_such_link()
        session = self._cookie(request, _SESSION_COOKIE, cid)
        if session is None:
            return self.sign_in_form(request, cid)
        pending = await self._get(cid)
        if pending is None or pending.principal != session["sub"]:
            return _not_for_you()
        return self.for_owner(pending, session)

    def sign_in_form(self, request: Request, cid: str, *, problem: str | None = None) -> Response:
        nonce = secrets.token_urlsafe(18)
        note = (
            f"<p id=problem class=alert role=alert data-outcome=bad-credential>{_e(problem)}</p>"
            if problem
            else ""
        )
        intro = (
            "<p class=lead>A tool asked to connect a service to your notewarden account.</p>"
            "<p>Sign in first: only then will this page show what would be connected, and for whom.</p>"
        )
        if self.authorization is not None:
            body = (
                f'{note}{intro}<div class=actions><a id=oauth-sign-in class=button href="/connect/{cid}/oauth">'
                f"Sign in with {_e(self.authorization.name)}</a></div>"
                "<details><summary class=muted>Sign in with a development token instead</summary>"
                f"{self._token_form(cid, nonce)}</details>"
            )
        else:
            body = note + intro + self._token_form(cid, nonce)
        response = _page("Sign in to notewarden", body, 401 if problem else 200)
        self._set_cookie(response, request, _PRE_COOKIE, cid, {"n": nonce, "exp": time.time() + self.ttl})
        return response

    @staticmethod
    def _token_form(cid: str, nonce: str) -> str:
        return (
            f'<form method=post action="/connect/{cid}/sign-in">'
            f'<input type=hidden name=csrf value="{nonce}">'
            "<label for=token>Your notewarden access token"
            "<span class=hint>The same token your MCP client uses for this server.</span></label>"
            "<input id=token name=token type=password autocomplete=off required>"
            "<div class=actions><button id=sign-in type=submit>Sign in</button></div></form>"
        )

    def for_owner(self, pending: PendingConnection, session: dict[str, Any]) -> Response:
        if pending.status is ConnectionStatus.DONE:
            return _page(
                "Already connected",
                "<p id=outcome class=done data-outcome=already-done>This connection was already completed. "
                "Return to your assistant.</p>",
            )
        if pending.status is ConnectionStatus.ABANDONED or pending.expired():
            return _expired()
        target = self.targets().get(pending.target)
        if target is None:
            return _expired()
        asked = pending.asked_by
        cid = pending.connection_id
        left = pending.expires_at - time.time()
        until = time.strftime("%H:%M UTC", time.gmtime(pending.expires_at))
        default = SDK_DEFAULT_CLIENT_NAMES.get(asked.client)
        if default is not None:  # the SDK's placeholder is not the app's name
            client = f"<span class=muted>an app that did not name itself (it sent {default})</span>"
        elif asked.client:
            client = f"{_e(asked.client)} <span class=muted>(as the app names itself)</span>"
        else:
            client = "<span class=muted>an app that did not name itself</span>"
        note = f"“{_e(asked.note_title)}” <code>{_e(asked.note_id)}</code>" if asked.note_id else "a note"
        sent = (
            f"POST {target.url}\n{target.auth_description}\nIdempotency-Key: <a new id per publish>\n\n"
            '{"noteId": …, "title": …, "markdown": <the note\'s whole text>}'
        )
        csrf = html.escape(str(session["csrf"]))
        return _page(
            f"Connect {visible_line(target.title)}?",
            f"<p class=lead>Signed in as <strong id=principal>{_e(pending.principal)}</strong>.</p>"
            f"<dl><dt>Asked by</dt><dd id=asked-by>{client}</dd>"
            f"<dt>Tool</dt><dd id=tool><code>{_e(asked.tool or 'notes_publish')}</code></dd>"
            f"<dt>To publish</dt><dd id=note>{note}</dd>"
            f"<dt>Service</dt><dd id=target-title>{_e(target.title)}</dd>"
            f"<dt>Address</dt><dd id=target-url><code>{_e(target.url)}</code></dd>"
            f"<dt>Link expires</dt><dd id=expires>{in_words(left)} ({until})</dd></dl>"
            "<p>Each publish you ask for sends exactly this, to that address only:</p>"
            f"<pre id=what-is-sent>{_e(sent)}</pre>"
            "<p class=muted>The credential is stored encrypted on the notewarden server. It never passes "
            "through your assistant, the app or the model.</p>"
            f'<form method=post action="/connect/{cid}/credential">'
            f'<input type=hidden name=csrf value="{csrf}">'
            f"<label for=credential>{_e(target.title)} credential"
            f"<span class=hint>Sent as <code>{_e(target.auth_description)}</code>.</span></label>"
            "<input id=credential name=credential type=password autocomplete=off required>"
            f"<div class=actions><button id=connect type=submit>Connect {_e(target.title)}</button>"
            f'<button id=decline class=secondary type=submit formaction="/connect/{cid}/decline" '
            "formnovalidate>Don't connect</button></div></form>",
        )

    async def sign_in(self, request: Request) -> Response:
        cid = request.path_params["cid"]
        if not CONNECTION_ID.fullmatch(cid):
            return _no_such_link()
        if self._cross_site(request):
            return _page("Refused", "<p data-outcome=cross-site>Cross-site form posts are refused.</p>", 403)
        form = await request.form()
        pre = self._cookie(request, _PRE_COOKIE, cid)
        csrf = form.get("csrf")
        if pre is None or not isinstance(csrf, str) or not hmac.compare_digest(csrf, str(pre["n"])):
            return _page(
                "Form expired",
                "<p class=alert data-outcome=csrf>This sign-in form expired or did not come from this page. "
                "Reload the page and try again.</p>",
                400,
            )
        token = form.get("token")
        access = await self.verify_token(token.strip()) if isinstance(token, str) and token.strip() else None
        if access is None or not access.subject:
            return self.sign_in_form(request, cid, problem="That access token was not accepted.")
        response = await self.signed_in(request, cid, access.subject)
        response.delete_cookie(_PRE_COOKIE, path=f"/connect/{cid}")
        return response

    async def signed_in(
        self, request: Request, cid: str, principal: str, *, redirect: bool = True
    ) -> Response:
        """Rule 1: a session for the link's owner only; the page then shows the connection."""
        pending = await self._get(cid)
        if pending is None or pending.principal != principal:
            logger.warning(
                "connect page: sign-in by a principal that does not own the link",
                extra={"connection": cid[:6], "principal": principal},
            )
            return _not_for_you()
        if pending.status is not ConnectionStatus.PENDING or pending.expired():
            return self.for_owner(pending, {})  # done, expired or abandoned: said to the owner only
        if redirect:
            response: Response = RedirectResponse(f"/connect/{cid}", status_code=303, headers=_HEADERS)
        else:  # after a cross-site redirect chain the Strict cookie needs a same-site navigation first
            response = _page(
                "Signed in",
                f"<p class=done data-outcome=signed-in>Signed in as {_e(principal)}.</p><div class=actions>"
                f'<a id=continue class=button href="/connect/{cid}">Continue</a></div>',
            )
        session = {"sub": principal, "csrf": secrets.token_urlsafe(18), "exp": pending.expires_at}
        self._set_cookie(response, request, _SESSION_COOKIE, cid, session)
        return response

    async def oauth_start(self, request: Request) -> Response:
        cid = request.path_params["cid"]
        if not CONNECTION_ID.fullmatch(cid) or self.authorization is None:
            return _no_such_link()
        verifier = secrets.token_urlsafe(48)
        state = secrets.token_urlsafe(18)
        try:
            location = await self.authorization.authorize_url(
                redirect_uri=self._callback_url(request), state=state, verifier=verifier
            )
        except SignInFailed as exc:
            return self.sign_in_form(request, cid, problem=str(exc))
        response = RedirectResponse(location, status_code=303, headers=_HEADERS)
        flow = {"cid": cid, "state": state, "v": verifier, "exp": time.time() + 600}
        # Lax: the authorization server's redirect back is a cross-site top-level navigation
        self._set_cookie(response, request, _OAUTH_COOKIE, "", flow, path=CALLBACK_PATH, samesite="lax")
        return response

    async def oauth_callback(self, request: Request) -> Response:
        if self.authorization is None:
            return _no_such_link()
        flow = self._cookie(request, _OAUTH_COOKIE, "")
        state, code = request.query_params.get("state", ""), request.query_params.get("code", "")
        if flow is None or not hmac.compare_digest(state, str(flow.get("state", ""))) or not code:
            return _page(
                "Sign-in expired",
                "<p class=alert data-outcome=csrf>This sign-in did not start in this browser or took too long. "
                "Open the link from your assistant again.</p>",
                400,
            )
        cid = str(flow["cid"])
        try:
            token = await self.authorization.exchange(
                code, redirect_uri=self._callback_url(request), verifier=str(flow["v"])
            )
        except SignInFailed as exc:
            return self.sign_in_form(request, cid, problem=str(exc))
        access = await self.verify_token(token)
        if access is None or not access.subject:
            return self.sign_in_form(request, cid, problem="Your account is not a notewarden principal here.")
        response = await self.signed_in(request, cid, access.subject, redirect=False)
        response.delete_cookie(_OAUTH_COOKIE, path=CALLBACK_PATH)
        return response

    @staticmethod
    def _callback_url(request: Request) -> str:
        return f"{request.url.scheme}://{request.url.netloc}{CALLBACK_PATH}"

    async def _owner_form(self, request: Request, cid: str) -> tuple[dict[str, Any], Any] | Response:
        """The session and the posted form of the link's owner, or the page that refuses them."""
        if not CONNECTION_ID.fullmatch(cid):
            return _no_such_link()
        if self._cross_site(request):
            return _page("Refused", "<p data-outcome=cross-site>Cross-site form posts are refused.</p>", 403)
        session = self._cookie(request, _SESSION_COOKIE, cid)
        if session is None:
            return _not_for_you()
        form = await request.form()
        csrf = form.get("csrf")
        if not isinstance(csrf, str) or not hmac.compare_digest(csrf, str(session["csrf"])):
            return _page(
                "Form expired", "<p class=alert data-outcome=csrf>Reload the page and try again.</p>", 400
            )
        return session, form

    async def store_credential(self, request: Request) -> Response:
        cid = request.path_params["cid"]
        checked = await self._owner_form(request, cid)
        if isinstance(checked, Response):
            return checked
        session, form = checked
        credential = form.get("credential")
        text = credential.strip() if isinstance(credential, str) else ""
        if not text or len(text) > MAX_CREDENTIAL_CHARS or any(ord(c) < 32 for c in text):
            return _page(
                "Credential not accepted",
                f"<p class=alert data-outcome=bad-input>Enter the credential as one line of at most "
                f"{MAX_CREDENTIAL_CHARS} characters. Go back and try again.</p>",
                400,
            )
        outcome = await anyio.to_thread.run_sync(self.connections.complete, cid, str(session["sub"]), text)
        logger.info("connect page: completion", extra={"connection": cid[:6], "outcome": outcome.value})
        if outcome is Completion.COMPLETED:
            return _page(
                "Connected",
                "<p id=outcome class=done data-outcome=completed>Done. Return to your assistant: it can now "
                "finish publishing. You can close this page.</p>",
            )
        if outcome is Completion.ALREADY_DONE:
            return _page(
                "Already connected",
                "<p id=outcome class=alert data-outcome=already-done>This connection was already completed; "
                "nothing was changed. Start again from your assistant to replace the credential.</p>",
                409,
            )
        if outcome is Completion.EXPIRED:
            return _expired()
        return _not_for_you()

    async def decline(self, request: Request) -> Response:
        cid = request.path_params["cid"]
        checked = await self._owner_form(request, cid)
        if isinstance(checked, Response):
            return checked
        session, _ = checked
        pending = await self._get(cid)
        if pending is None or pending.principal != session["sub"]:
            return _not_for_you()
        if pending.status is not ConnectionStatus.PENDING:
            return self.for_owner(pending, session)
        await anyio.to_thread.run_sync(self.connections.abandon, cid, str(session["sub"]))
        logger.info("connect page: declined", extra={"connection": cid[:6]})
        return _declined()


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
        services.config.oauth,
    )
    return [
        Route(CALLBACK_PATH, pages.oauth_callback, methods=["GET"]),
        Route("/connect/{cid}", pages.show, methods=["GET"]),
        Route("/connect/{cid}/sign-in", pages.sign_in, methods=["POST"]),
        Route("/connect/{cid}/oauth", pages.oauth_start, methods=["GET"]),
        Route("/connect/{cid}/credential", pages.store_credential, methods=["POST"]),
        Route("/connect/{cid}/decline", pages.decline, methods=["POST"]),
    ]
