// @modelcontextprotocol/client 2.4.0: a 2026-07-28 client (pinned era, MRTR auto-fulfilment).
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { answerElicitation, fail, report, scenario } from "./common.mjs";

const transport =
  scenario.transport === "stdio"
    ? new StdioClientTransport({ command: scenario.command[0], args: scenario.command.slice(1), stderr: "ignore" })
    : new StreamableHTTPClientTransport(new URL(scenario.url), {
        requestInit: { headers: { Authorization: `Bearer ${scenario.token}` } },
      });
const client = new Client(
  { name: "interop-client-v2", version: "2.4.0" },
  {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  },
);
client.setRequestHandler("elicitation/create", async (request) => answerElicitation(request.params));
try {
  await client.connect(transport);
  const result = await client.callTool({ name: scenario.tool, arguments: scenario.arguments });
  report(client.getNegotiatedProtocolVersion?.() ?? "2026-07-28", result);
} catch (error) {
  fail(error);
} finally {
  await client.close();
}
