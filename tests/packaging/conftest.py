"""The two distributions of this checkout, built once per session (wheels are slow to build)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "packages" / "notewarden-confirm"


@pytest.fixture(scope="session")
def library_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """notewarden-confirm's wheel, built from packages/notewarden-confirm."""
    dist = tmp_path_factory.mktemp("library-wheel")
    argv = [sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps"]
    done = subprocess.run([*argv, "-w", str(dist), str(LIBRARY)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    [wheel] = dist.glob("notewarden_confirm-*.whl")
    return wheel
