"""Draw docs/images/*.png from a real server, a real browser and a real terminal (scripts/screenshots).

connect-sign-in.png, connect-light.png, connect-dark.png: the URL-mode connect page of a
notes_publish, as a person signed in with a development token sees it. client.png (and
client.txt, the same screen as text): `notewarden client` showing a delete confirmation form,
run in tmux and captured with capture-pane.
"""

from __future__ import annotations

import hashlib
import html
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import free_port, start_http_server  # noqa: E402
from tests.wire.publishing import CHROMIUM, CHROMIUM_FLAGS, RecordingTarget  # noqa: E402
from tests.wire.rawhttp import RawMcp, meta  # noqa: E402

from notewarden.demo import write_sample_workspace  # noqa: E402

IMAGES = ROOT / "docs" / "images"
TOKEN = "nw_screenshot-token-" + "t" * 24
TMUX_SESSION = f"notewarden-shot-{free_port()}"
CLIENT_STEPS = [  # (keys typed, what the screen shows next): a delete confirmation filled in
    (["call notes_delete"], "Enter to call"),
    (["title"], "title:"),
    (["TPS report"], "Enter to call"),
    ([], "[a]ccept and fill in"),
    (["a"], "Note to delete [1-3]"),
    (["2"], "Yes, move the selected note to the trash [y/N]"),
    (["y"], "send it?"),
]


def write_config(root: Path, notes: Path, target: RecordingTarget) -> Path:
    config = root / "notewarden.toml"
    config.write_text(
        f'state_dir = "{root / "state"}"\n[[workspace]]\nuri = "file://{notes}"\n'
        f'[[principal]]\nid = "alice"\nworkspaces = ["file://{notes}"]\nrights = ["owner"]\n'
        f'token_sha256 = ["{hashlib.sha256(TOKEN.encode()).hexdigest()}"]\n[stdio]\nprincipal = "alice"\n'
        f'[publish]\n[[publish.target]]\nid = "blog"\ntitle = "Team blog"\nurl = "{target.url}"\nauth = "bearer"\n'
    )
    return config


def connect_pages(root: Path, notes: Path) -> None:
    target = RecordingTarget().start()
    server = start_http_server(write_config(root, notes, target), root / "server.log", port=free_port())
    client = RawMcp(server.url, TOKEN)
    try:
        reply = client.request(
            "tools/call",
            {
                "name": "notes_publish",
                "arguments": {
                    "workspaceUri": f"file://{notes}",
                    "noteId": "reports/tps-2026-q3.md",
                    "target": "blog",
                },
                "_meta": meta(
                    {"elicitation": {"url": {}}},
                    **{"io.modelcontextprotocol/clientInfo": {"name": "Claude Desktop", "version": "1.0"}},
                ),
            },
        )
        link = reply.result["inputRequests"]["publish_connect"]["params"]["url"]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
            for scheme in ("light", "dark"):
                page = browser.new_context(
                    color_scheme=scheme, viewport={"width": 820, "height": 900}
                ).new_page()
                page.goto(link)
                if scheme == "light":
                    page.screenshot(path=str(IMAGES / "connect-sign-in.png"), full_page=True)
                page.fill("#token", TOKEN)
                page.click("#sign-in")
                page.wait_for_selector("#credential")
                page.screenshot(path=str(IMAGES / f"connect-{scheme}.png"), full_page=True)
                page.context.close()
            browser.close()
    finally:
        client.close()
        server.stop()
        target.stop()


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def wait_for_screen(text: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        screen = tmux("capture-pane", "-p", "-t", TMUX_SESSION)
        if text in screen:
            return screen
        time.sleep(0.1)
    raise RuntimeError(f"{text!r} never appeared:\n{screen}")


def terminal_client(root: Path, notes: Path) -> None:
    server = shlex.join(
        [
            sys.executable,
            "-m",
            "notewarden",
            "serve",
            "--workspace",
            str(notes),
            "--state-dir",
            str(root / "stdio-state"),
        ]
    )
    client = shlex.join([sys.executable, "-m", "notewarden", "client", "--stdio", server])
    tmux(
        "new-session",
        "-d",
        "-s",
        TMUX_SESSION,
        "-x",
        "92",
        "-y",
        "30",
        f"cd {shlex.quote(str(root))} && {client}",
    )
    try:
        screen = wait_for_screen("mcp>")
        for keys, shown in CLIENT_STEPS:
            tmux("send-keys", "-t", TMUX_SESSION, *keys, "Enter")
            screen = wait_for_screen(shown)
    finally:
        tmux("kill-session", "-t", TMUX_SESSION)
    text = "\n".join(line.rstrip() for line in screen.rstrip().splitlines())
    (IMAGES / "client.txt").write_text(text + "\n")
    page_html = (
        "<body style='margin:0;background:#1e1f22'><pre style=\"margin:0;padding:18px 22px;color:#e6e6e6;"
        "font:15px/1.35 'DejaVu Sans Mono',monospace;white-space:pre\">" + html.escape(text) + "</pre></body>"
    )
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 900, "height": 300})
        page.set_content(page_html)
        page.locator("pre").screenshot(path=str(IMAGES / "client.png"))
        browser.close()


def main() -> int:
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="notewarden-shots-") as tmp:
        root = Path(tmp)
        notes = write_sample_workspace(root / "notes")
        (root / "state").mkdir(mode=0o700)
        connect_pages(root, notes)
        terminal_client(root, notes)
    for name in sorted(IMAGES.iterdir()):
        print(f"wrote {name.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
