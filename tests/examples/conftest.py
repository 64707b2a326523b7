"""The examples' tests use the confirmation library's public pytest fixtures, as an author's would.

An author's top-level conftest.py says `pytest_plugins = ["notewarden.confirm.pytest_plugin"]`;
pytest allows that line only in the rootdir's conftest, so this directory imports the fixtures."""

from notewarden.confirm.pytest_plugin import confirm_arm, confirm_pause

__all__ = ["confirm_arm", "confirm_pause"]
