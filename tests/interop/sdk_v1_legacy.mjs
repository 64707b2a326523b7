// @modelcontextprotocol/sdk 1.32.2: a 2025-11-25 client (initialize, live elicitation/create).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { answerElicitation, fail, report, scenario } from "./common.mjs";

const transport =
  scenario.transport === "stdio"
    ? new StdioClientTransport({ command: scenario.command[0], args: scenario.command.slice(1), stderr: "ignore" })
    : new StreamableHTTPClientTransport(new URL(scenario.url), {
        requestInit: { headers: { Authorization: `Bearer ${scenario.token}` } },
      });
const client = new Client(
  { name: "interop-sdk-v1", version: "1.32.2" },
  { capabilities: { elicitation: { form: {}, url: {} } } },
);
client.setRequestHandler(ElicitRequestSchema, async (request) => answerElicitation(request.params));
try {
  await client.connect(transport);
  const result = await client.callTool({ name: scenario.tool, arguments: scenario.arguments });
  report(transport.protocolVersion ?? "2025-11-25", result);
} catch (error) {
  fail(error);
} finally {
  await client.close();
}
