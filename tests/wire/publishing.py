"""Test parts for notes_publish: a loopback publish target, its config, and a real browser.

The browser is Debian's Chromium (`/usr/bin/chromium`, installed by scripts/services)
driven by Playwright; it is never downloaded by Playwright.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from playwright.sync_api import Page, sync_playwright

from tests.conftest import Deployment

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class RecordingTarget:
    """A tiny HTTP service on 127.0.0.1 that records every note it is sent; with `release`, it
    answers only once that event is set (a stalled target)."""

    status: int = 201
    location: str | None = None  # the Location a 201 names (where the note was published)
    received: list[Received] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None
    release: threading.Event | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/api/notes"

    def start(self) -> RecordingTarget:
        target = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                target.received.append(
                    Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                if target.release is not None:
                    target.release.wait(timeout=60)
                self.send_response(target.status)
                if target.location is not None:
                    self.send_header("location", target.location)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.release is not None:
            self.release.set()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def add_publish_config(deployment: Deployment, target: RecordingTarget, *, connect_ttl: float = 600) -> None:
    """Rewrite the deployment's config with one publish target, "blog"."""
    deployment.write_config()
    with deployment.config.open("a") as f:
        f.write(
            f"[publish]\nconnect_ttl_seconds = {connect_ttl}\n"
            f'[[publish.target]]\nid = "blog"\ntitle = "Team blog"\nurl = "{target.url}"\nauth = "bearer"\n'
        )


@dataclass
class BrowserVisit:
    """What a person saw: the outcome marker of each page, and the page texts."""

    sign_in: str = ""
    completion: str = ""
    replay: str = ""
    replay_status: int = 0
    texts: list[str] = field(default_factory=list)


def _outcome(page: Page) -> str:
    marker = page.query_selector("[data-outcome]")
    if marker is not None:
        return marker.get_attribute("data-outcome") or ""
    return "form" if page.query_selector("#credential") is not None else "unknown"


def visit_connect_page(
    url: str, *, token: str, credential: str | None = None, replay: bool = False
) -> BrowserVisit:
    """Open the elicited URL as a person would: sign in, read, enter the credential, submit.

    One headless Chromium per visit, with a fresh empty profile (no cookies carried over).
    """
    visit = BrowserVisit()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        try:
            page = browser.new_context().new_page()
            page.goto(url)
            visit.texts.append(page.inner_text("body"))
            page.fill("#token", token)
            page.click("#sign-in")
            page.wait_for_load_state()
            visit.sign_in = _outcome(page)
            visit.texts.append(page.inner_text("body"))
            if credential is not None and visit.sign_in == "form":
                csrf = page.get_attribute("input[name=csrf]", "value") or ""
                page.fill("#credential", credential)
                page.click("#connect")
                page.wait_for_load_state()
                visit.completion = _outcome(page)
                visit.texts.append(page.inner_text("body"))
                if replay:
                    again = page.request.post(
                        url + "/credential",
                        form={"csrf": csrf, "credential": credential + "-replayed"},
                        headers={"Origin": url.split("/connect/")[0]},
                    )
                    visit.replay_status = again.status
                    page.set_content(again.text())
                    visit.replay = _outcome(page)
        finally:
            browser.close()
    return visit
