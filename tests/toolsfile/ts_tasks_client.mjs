// The official TypeScript SDK client (1.x, experimental 2025-11-25 tasks) driving `mcp serve`
// over stdio: task-augmented calls through client.experimental.tasks.callToolStream.
// Usage: node ts_tasks_client.mjs SDK_DIR PYTHON TOOLS_YAML   (prints one JSON object)
const [sdkDir, python, toolsYaml] = process.argv.slice(2);
const { Client } = await import(`${sdkDir}/dist/esm/client/index.js`);
const { StdioClientTransport } = await import(`${sdkDir}/dist/esm/client/stdio.js`);
const { ElicitRequestSchema } = await import(`${sdkDir}/dist/esm/types.js`);

const client = new Client({ name: 'ts-tasks', version: '1.0.0' }, { capabilities: { elicitation: {} } });
const elicited = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  elicited.push(request.params);
  return { action: 'accept', content: { confirm: true } };
});
await client.connect(new StdioClientTransport({ command: python, args: ['-m', 'mcpcli', 'serve', '--quiet', toolsYaml] }));

async function stream(name, args) {
  const seen = [];
  for await (const message of client.experimental.tasks.callToolStream({ name, arguments: args })) {
    if (message.type === 'taskCreated') seen.push({ type: 'taskCreated', status: message.task.status });
    else if (message.type === 'taskStatus') seen.push({ type: 'taskStatus', status: message.task.status });
    else if (message.type === 'result') seen.push({ type: 'result', result: message.result });
    else seen.push({ type: message.type, error: String(message.error?.message ?? message.error) });
  }
  return seen;
}

const out = { capabilities: client.getServerCapabilities() };
out.tools = Object.fromEntries((await client.listTools()).tools.map((t) => [t.name, t.execution ?? null]));
out.confirm = await stream('confirm', {});
out.elicited = elicited;
out.fail = await stream('fail', {});
const created = await client.request(
  { method: 'tools/call', params: { name: 'hang', arguments: {}, task: { ttl: 60000 } } },
  (await import(`${sdkDir}/dist/esm/types.js`)).CreateTaskResultSchema);
out.cancelled = await client.experimental.tasks.cancelTask(created.task.taskId);
out.listed = (await client.experimental.tasks.listTasks()).tasks.map((t) => t.status).sort();
await client.close();
console.log(JSON.stringify(out));
