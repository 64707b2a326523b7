// @modelcontextprotocol/client 2.4.0 on a 403 insufficient_scope: OAuth client credentials from a real
// authorization server, no static token. What the client does is recorded, not assumed: every token
// request's `scope` and every answer of the MCP endpoint (status, WWW-Authenticate).
//
// Scenario (argv[2], JSON): {url, issuer, clientId, clientSecret, scope, tool, arguments, answer}
// Output (stdout, one line): {tools, elicitations, result | error, tokenScopes, exchanges, grantedScope}
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { answerElicitation, elicitations, scenario } from "./common.mjs";

const tokenScopes = [];
const exchanges = [];
async function recordingFetch(input, init) {
  const url = String(input instanceof Request ? input.url : input);
  if (url === `${scenario.issuer}/token`) tokenScopes.push(new URLSearchParams(String(init?.body)).get("scope"));
  const response = await fetch(input, init);
  if (url === scenario.url) {
    exchanges.push({ status: response.status, challenge: response.headers.get("www-authenticate") });
  }
  return response;
}

const provider = new ClientCredentialsProvider({
  clientId: scenario.clientId,
  clientSecret: scenario.clientSecret,
  expectedIssuer: scenario.issuer,
  scope: scenario.scope,
});
const transport = new StreamableHTTPClientTransport(new URL(scenario.url), {
  authProvider: provider,
  fetch: recordingFetch,
});
const client = new Client(
  { name: "interop-step-up-v2", version: "2.4.0" },
  { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
);
client.setRequestHandler("elicitation/create", async (request) => answerElicitation(request.params));
const out = { tokenScopes, exchanges, elicitations };
try {
  await client.connect(transport);
  out.tools = (await client.listTools()).tools.map((tool) => tool.name);
  out.result = await client.callTool({ name: scenario.tool, arguments: scenario.arguments });
} catch (error) {
  out.error = { message: String(error?.message ?? error), code: error?.code, status: error?.status };
} finally {
  out.grantedScope = (await provider.tokens())?.scope;
  await client.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
