"""Issue 26: `notewarden` on PATH for a person, as the README says, in a fresh HOME.

The README's block marked `on-path` is run as written by bash, in a HOME that has only a notes
folder, with a PATH like a login shell's on Debian, Ubuntu or Fedora (`~/.local/bin` first, no venv of
this repository on it): `./scripts/install`, then `notewarden init ~/notes` and `notewarden doctor`
must find the command and pass. Then the same install with `~/.local/bin` missing from PATH must
say the line to add.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_block() -> str:
    text = (ROOT / "README.md").read_text()
    found = re.search(r"<!-- on-path:[^>]*-->\n```sh\n(.*?)```", text, re.DOTALL)
    assert found, "README.md has no block marked on-path"
    return found.group(1)


def outside_the_repo(path: str) -> str:
    """PATH without this repository's venv (where a `notewarden` already is)."""
    kept = [p for p in path.split(os.pathsep) if p and not Path(p).resolve().is_relative_to(ROOT)]
    return os.pathsep.join(kept)


def test_the_readme_puts_notewarden_on_path_in_a_fresh_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "notes").mkdir(parents=True)
    (home / "notes" / "hello.md").write_text("# Hello\n")
    path = f"{home}/.local/bin{os.pathsep}{outside_the_repo(os.environ['PATH'])}"
    assert shutil.which("notewarden", path=path) is None, "a notewarden is on PATH before the install"
    env = {
        "HOME": str(home),
        "PATH": path,
        "LANG": "C.UTF-8",
        **{k: v for k, v in os.environ.items() if k.startswith("PIP_")},
    }
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", readme_block()],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    shown = done.stdout + done.stderr
    assert done.returncode == 0, shown[-4000:]
    assert "installed notewarden " in shown and f"as {home}/.local/bin/notewarden" in shown
    assert "it is on your PATH" in shown
    assert f"Wrote {home}/.config/notewarden/notewarden.toml" in shown
    assert "Check it:  notewarden doctor" in shown
    assert "All checks passed." in shown, shown[-3000:]
    assert f'"command": "{home}/.local/share/notewarden/venv/bin/notewarden"' in shown, (
        "entries name the installed command"
    )

    again = subprocess.run(
        ["./scripts/install"],
        cwd=ROOT,
        env={**env, "PATH": outside_the_repo(os.environ["PATH"])},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"{home}/.local/bin is not on your PATH yet" in again.stdout
    assert """echo 'export PATH="$HOME/.local/bin:$PATH"' >> ~/.profile""" in again.stdout
