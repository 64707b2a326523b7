"""The official TypeScript clients on the `403 insufficient_scope` step-up, against the real
authorization server (oidc-provider, tests/authserver) and a real notewarden.

Both get their tokens by client credentials (`ClientCredentialsProvider`, no browser), starting with
`notewarden:read`, and then call `notes_delete`, which needs `notewarden:delete`. What each does
is recorded, not assumed: the scope of every token request it makes and every status the MCP
endpoint answers it (step_up_v1.mjs, step_up_v2.mjs).

* `@modelcontextprotocol/client` 2.4.0 steps up: it asks the authorization server again for the
  union of the scopes it had and the challenged one, retries once, and the delete goes through
  (both rounds, the form answered by its elicitation handler).
* `@modelcontextprotocol/sdk` 1.32.2 tries, but a non-interactive provider asks again for the scope
  it was configured with (`fetchToken` reads `clientMetadata.scope`, not the challenge): the same
  narrow token, the same 403, and it gives up ("Server returned 403 after trying upscoping").
  docs/security.md has the code each one runs.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.authserver import SERVICE_CLIENT, SERVICE_SECRET
from tests.interop.test_interop import HERE, node
from tests.wire.test_oauth import READ_TOOLS, TPS, OAuthServer, challenge, trash_ids


def step_up(script: str, oauth: OAuthServer, scope: str) -> dict[str, Any]:
    scenario = {
        "url": oauth.server.url,
        "issuer": oauth.authority.issuer,
        "clientId": SERVICE_CLIENT,
        "clientSecret": SERVICE_SECRET,
        "scope": scope,
        "tool": "notes_delete",
        "arguments": {"workspaceUri": oauth.deployment.notes_uri, "title": "TPS report"},
        "answer": {"action": "accept", "pick": "TPS report 2019"},
    }
    proc = subprocess.run(
        [node(), str(HERE / script), json.dumps(scenario)],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    assert lines, f"{script} printed nothing (exit {proc.returncode}): {proc.stderr[-2000:]}"
    return dict(json.loads(lines[-1]))


def asked_scopes(run: dict[str, Any]) -> list[str]:
    """The scope of each 403 challenge the client was given, in order."""
    return [challenge(e["challenge"])["scope"] for e in run["exchanges"] if e["status"] == 403]


def test_client_2_4_steps_up_to_the_challenged_scope_and_deletes(oauth: OAuthServer) -> None:
    run = step_up("step_up_v2.mjs", oauth, "notewarden:read")
    assert "error" not in run, run
    assert set(run["tools"]) == READ_TOOLS, "a read-only token is shown the eleven read tools"
    assert asked_scopes(run) == ["notewarden:delete"]
    # first the configured scope (the 401's challenge asks for the same), then the union
    assert run["tokenScopes"] == ["notewarden:read", "notewarden:read notewarden:delete"]
    assert set(run["grantedScope"].split()) == {"notewarden:read", "notewarden:delete"}
    assert [e["status"] for e in run["exchanges"]].count(403) == 1, "one step-up, then the retry"
    assert run["result"]["structuredContent"]["outcome"] == "deleted", run["result"]
    assert [e["fields"] for e in run["elicitations"]] == [["note_id", "confirm"]]
    assert not (oauth.deployment.notes / TPS).exists()
    client = oauth.client(oauth.issue("notewarden:read"))
    assert TPS in trash_ids(client, oauth.deployment)
    client.close()


def test_sdk_1_32_asks_again_for_its_configured_scope_and_gives_up(oauth: OAuthServer) -> None:
    run = step_up("step_up_v1.mjs", oauth, "notewarden:read")
    assert set(run["tools"]) == READ_TOOLS
    assert run["error"]["code"] == 403, run["error"]  # StreamableHTTPError(403, …)
    assert "Server returned 403 after trying upscoping" in run["error"]["message"], run["error"]
    assert asked_scopes(run) == ["notewarden:delete", "notewarden:delete"], "the same challenge twice"
    assert run["tokenScopes"] == ["notewarden:read", "notewarden:read"], "never the challenged scope"
    assert run["grantedScope"] == "notewarden:read"
    assert "result" not in run and run["elicitations"] == []
    assert (oauth.deployment.notes / TPS).exists()


def test_sdk_1_32_configured_with_the_scope_deletes(oauth: OAuthServer) -> None:
    """What a 1.x client needs instead: the scope its tools need, configured up front."""
    run = step_up("step_up_v1.mjs", oauth, "notewarden:read notewarden:delete")
    assert "error" not in run, run
    assert set(run["tools"]) == READ_TOOLS | {"notes_delete"}
    assert asked_scopes(run) == []
    assert run["result"]["structuredContent"]["outcome"] == "deleted", run["result"]
    assert not (oauth.deployment.notes / TPS).exists()
