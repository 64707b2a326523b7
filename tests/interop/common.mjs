// Shared by the interop clients: read the scenario, answer elicitations, print one JSON line.
//
// Scenario (argv[2], JSON): {transport: "stdio"|"http", command?: [argv...], url?, token?,
//   tool, arguments, answer: {action, pick?, confirm?}}
// Output (stdout, one line): {protocolVersion, elicitations: [{mode, message, fields}], result}

export const scenario = JSON.parse(process.argv[2]);
export const elicitations = [];

export function answerElicitation(params) {
  const mode = params.mode ?? "form";
  const fields = mode === "form" ? Object.keys(params.requestedSchema?.properties ?? {}) : [];
  elicitations.push({ mode, message: params.message, fields, url: params.url, elicitationId: params.elicitationId });
  const { action, pick, confirm } = scenario.answer;
  if (action !== "accept" || mode !== "form") return { action };
  const options = params.requestedSchema.properties.note_id.oneOf;
  const chosen = options.find((o) => o.title.includes(pick));
  if (!chosen) throw new Error(`no offered note has ${pick} in its title`);
  return { action: "accept", content: { note_id: chosen.const, confirm: confirm ?? true } };
}

export function report(protocolVersion, result) {
  process.stdout.write(JSON.stringify({ protocolVersion, elicitations, result }) + "\n");
}

export function fail(error) {
  process.stdout.write(
    JSON.stringify({ error: { message: String(error?.message ?? error), code: error?.code, data: error?.data } }) +
      "\n",
  );
}
