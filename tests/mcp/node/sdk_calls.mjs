// `node sdk_calls.mjs URL TOKEN CALLS`: the official TypeScript MCP client
// (@modelcontextprotocol/sdk) calls each tool of CALLS (a JSON list of {name, arguments}) on a
// Datawell server and prints, as one JSON list, what the client saw of each call: the result
// (isError, texts, structuredContent) or the error it threw (code, message). Run by
// tests/mcp/test_node_clients.py; never part of the product.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, calls] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "datawell-tests", version: "1.0.0" });
await client.connect(transport);
// The client checks structured content against the output schemas it has listed.
const tools = (await client.listTools()).tools.map((tool) => tool.name);
const seen = [];
for (const call of JSON.parse(calls)) {
  try {
    const result = await client.callTool({ name: call.name, arguments: call.arguments });
    seen.push({
      name: call.name,
      isError: result.isError === true,
      texts: result.content.filter((block) => block.type === "text").map((block) => block.text),
      structuredContent: result.structuredContent ?? null,
    });
  } catch (error) {
    seen.push({ name: call.name, thrown: { code: error.code ?? null, message: String(error.message) } });
  }
}
await client.close();
console.log(JSON.stringify({ tools, calls: seen }));
