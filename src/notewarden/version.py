"""notewarden's version, in one place (pyproject.toml's `[project] version`, server.json's and the
command's `--version` match it: tests/packaging/test_server_json.py). `notewarden` is a namespace
package shared with the `notewarden-confirm` distribution (docs/packaging.md), so it has no
`__init__.py` to hold it."""

__version__ = "0.1.0"
