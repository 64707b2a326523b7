"""The connect page as a person sees it (issue 16, 12 §3): one server and one headless Chromium per module.

What it names (note, tool, client, service, exactly what is sent), "Don't connect" and the client's
retry that then declines, the distinct re-ask while the page is not finished, the published URL in
the tool result, the stylesheet (labels, focus, light and dark, no script), hostile names escaped,
and a connection id outside its alphabet refused before it becomes a cookie path.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from notewarden.demo import write_sample_workspace
from tests.conftest import ALICE_TOKEN, Deployment, HttpServer, start_http_server
from tests.wire.publishing import CHROMIUM, CHROMIUM_FLAGS, RecordingTarget, add_publish_config
from tests.wire.rawhttp import RawMcp, meta

URL_MODE = {"elicitation": {"url": {}}}
CREDENTIAL = "blog-credential-" + "k" * 16
EVIL_NOTE = "evil.md"
EVIL_TITLE = "Quarterly \u202egpj.exe"


@dataclass
class Site:
    deployment: Deployment
    target: RecordingTarget
    server: HttpServer
    browser: Browser

    def client(self) -> RawMcp:
        return RawMcp(self.server.url, ALICE_TOKEN)

    def round1(self, client: RawMcp, target: str, note: str = "reports/tps-2019.md") -> dict[str, Any]:
        result = client.call("notes_publish", self.args(note, target), capabilities=URL_MODE).result
        assert result["resultType"] == "input_required", result
        return result

    def retry(
        self,
        client: RawMcp,
        first: dict[str, Any],
        action: str | None,
        target: str,
        note: str = "reports/tps-2019.md",
    ) -> dict[str, Any]:
        responses = {"publish_connect": {"action": action}} if action else {}
        return client.call(
            "notes_publish",
            self.args(note, target),
            capabilities=URL_MODE,
            inputResponses=responses,
            requestState=first["requestState"],
        ).result

    def args(self, note: str, target: str) -> dict[str, str]:
        return {"workspaceUri": self.deployment.notes_uri, "noteId": note, "target": target}

    def signed_in_page(self, link: str, *, dark: bool = False) -> Page:
        page = self.browser.new_context(color_scheme="dark" if dark else "light").new_page()
        page.goto(link)
        page.fill("#token", ALICE_TOKEN)
        page.click("#sign-in")
        page.wait_for_selector("#credential")
        return page


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("connect")
    notes = write_sample_workspace(root / "notes")
    (notes / EVIL_NOTE).write_text(f"# {EVIL_TITLE}\n\nnumbers\n")
    private, state = root / "private", root / "state"
    private.mkdir()
    state.mkdir(mode=0o700)
    deployment = Deployment(root, notes, private, state, root / "notewarden.toml")
    target = RecordingTarget(location="/posts/42").start()
    add_publish_config(deployment, target)
    with deployment.config.open("a") as config:  # one target per test: a stored credential skips the page
        for extra in ("decline", "style", "evil", "nameless"):
            config.write(
                f'[[publish.target]]\nid = "{extra}"\ntitle = "Team blog"\nurl = "{target.url}"\nauth = "bearer"\n'
            )
    server = start_http_server(deployment.config, root / "server.log")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        try:
            yield Site(deployment, target, server, browser)
        finally:
            browser.close()
            server.stop()
            target.stop()


def test_a_client_that_sends_only_its_sdks_default_name_is_shown_as_nameless(site: Site) -> None:
    """The Python SDK sends clientInfo name "mcp" when the app gives none: not the app's name."""
    placeholder = {"io.modelcontextprotocol/clientInfo": {"name": "mcp", "version": "0.1.0"}}
    reply = site.client().request(
        "tools/call",
        {
            "name": "notes_publish",
            "arguments": site.args("reports/tps-2019.md", "nameless"),
            "_meta": meta(URL_MODE, **placeholder),
        },
    )
    page = site.signed_in_page(link_of(reply.result))
    asked = page.inner_text("#asked-by")
    assert asked.startswith("an app that did not name itself") and "default name" in asked, asked
    page.context.close()


def link_of(result: dict[str, Any]) -> str:
    return str(result["inputRequests"]["publish_connect"]["params"]["url"])


def message_of(result: dict[str, Any]) -> str:
    return str(result["inputRequests"]["publish_connect"]["params"]["message"])


def test_the_page_names_who_asked_and_what_is_sent_and_the_result_has_the_published_url(site: Site) -> None:
    client = site.client()
    first = site.round1(client, "blog")
    again = site.retry(client, first, "accept", "blog")
    assert again["resultType"] == "input_required" and link_of(again) == link_of(first)
    assert "not finished yet" in message_of(again) and message_of(again) != message_of(first)

    page = site.signed_in_page(link_of(first))
    assert "raw-test" in page.inner_text("#asked-by") and "names itself" in page.inner_text("#asked-by")
    assert page.inner_text("#tool") == "notes_publish"
    assert "TPS report 2019 (old)" in page.inner_text("#note") and "reports/tps-2019.md" in page.inner_text(
        "#note"
    )
    assert page.inner_text("#target-title") == "Team blog"
    sent = page.inner_text("#what-is-sent")
    assert f"POST {site.target.url}" in sent and "Authorization: Bearer <credential>" in sent
    assert "Idempotency-Key" in sent and '"markdown"' in sent
    expires = page.inner_text("#expires")
    assert expires.startswith("in ") and "minute(s)" not in expires and " UTC)" in expires
    assert page.query_selector("script") is None
    for field in ("credential",):
        assert page.query_selector(f"label[for={field}]") is not None, "every input has its label"
    page.fill("#credential", CREDENTIAL)
    page.click("#connect")
    page.wait_for_selector("[data-outcome=completed]")
    page.context.close()

    done = site.retry(client, first, "accept", "blog")
    assert done["structuredContent"]["outcome"] == "published"
    url = site.target.url.replace("/api/notes", "/posts/42")
    assert done["structuredContent"]["url"] == url and url in done["content"][0]["text"]
    client.close()


def test_dont_connect_makes_the_clients_retry_a_decline(site: Site) -> None:
    client = site.client()
    received = len(site.target.received)
    first = site.round1(client, "decline", "meetings/standup.md")
    page = site.signed_in_page(link_of(first))
    page.click("#decline")
    page.wait_for_selector("[data-outcome=declined]")
    assert "Nothing was connected" in page.inner_text("body")
    page.goto(link_of(first))
    assert page.query_selector("[data-outcome=expired]") is not None, "the link stops working"
    page.context.close()
    answered = site.retry(client, first, "accept", "decline", "meetings/standup.md")
    assert answered["resultType"] == "complete" and not answered.get("isError")
    assert answered["structuredContent"]["outcome"] == "declined"
    assert len(site.target.received) == received, "nothing was sent"
    client.close()


def test_stylesheet_light_dark_focus_and_no_inline_script(site: Site) -> None:
    client = site.client()
    link = link_of(site.round1(client, "style", "todo.md"))
    colors = []
    for dark in (False, True):
        page = site.signed_in_page(link, dark=dark)
        colors.append(page.evaluate("getComputedStyle(document.body).backgroundColor"))
        page.keyboard.press("Tab")
        page.keyboard.press("Tab")
        focused = page.evaluate(
            "(() => { const s = getComputedStyle(document.activeElement); return [document.activeElement.id, s.outlineStyle, s.outlineWidth]; })()"
        )
        assert focused[1] == "solid" and focused[2] == "3px", f"a visible focus ring: {focused}"
        page.context.close()
    assert colors[0] != colors[1], "light and dark differ"
    with httpx2.Client(timeout=10) as http:
        policy = http.get(link).headers["content-security-policy"]
    assert "style-src 'sha256-" in policy and "unsafe-inline" not in policy and "script-src" not in policy
    client.close()


def test_names_from_notes_are_shown_escaped(site: Site) -> None:
    client = site.client()
    first = site.round1(client, "evil", EVIL_NOTE)
    assert "\u202e" not in message_of(first) and "\\u202e" in message_of(first)
    page = site.signed_in_page(link_of(first))
    note = page.inner_text("#note")
    assert "\\u202egpj.exe" in note and "\u202e" not in page.content()
    page.context.close()
    client.close()


@pytest.mark.parametrize("cid", ["x; Domain=evil.example", "abc", "A" * 65, "..%2f..%2fadmin"])
def test_a_connection_id_outside_its_alphabet_is_refused_before_any_cookie(site: Site, cid: str) -> None:
    with httpx2.Client(timeout=10) as http:
        page = http.get(f"http://127.0.0.1:{site.server.port}/connect/{cid}")
        posted = http.post(f"http://127.0.0.1:{site.server.port}/connect/{cid}/sign-in", data={"token": "x"})
    for response in (page, posted):
        assert response.status_code in (404,), (cid, response.status_code)
        assert "set-cookie" not in response.headers
