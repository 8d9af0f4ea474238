// The device sign-in's real peer: npm oidc-provider (a certified OpenID provider) with the
// device flow, dynamic registration and resource indicators on AS_PORT, and on MCP_PORT an
// MCP endpoint it protects (protected-resource metadata, a 401 that points to it, and a
// few JSON-RPC answers for a token the provider issued for that endpoint).
//   node oidc_device_peer.mjs   (env: OIDC_PROVIDER = the package's entry module, AS_PORT, MCP_PORT)
import http from 'node:http';
import { pathToFileURL } from 'node:url';

const { default: Provider, errors } = await import(pathToFileURL(process.env.OIDC_PROVIDER).href);
const asPort = Number(process.env.AS_PORT);
const mcpPort = Number(process.env.MCP_PORT);
const issuer = `http://127.0.0.1:${asPort}`;
const resource = `http://127.0.0.1:${mcpPort}/mcp`;
const metadata = `http://127.0.0.1:${mcpPort}/.well-known/oauth-protected-resource/mcp`;

const provider = new Provider(issuer, {
  features: {
    devInteractions: { enabled: true }, // a login form that takes any name: the person's side
    deviceFlow: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator) => {
        if (indicator !== resource) throw new errors.InvalidTarget();
        return { scope: 'mcp', audience: resource, accessTokenFormat: 'opaque' };
      },
    },
  },
  scopes: ['openid', 'offline_access', 'mcp'],
  issueRefreshToken: async () => true,
  findAccount: async (ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
});
provider.listen(asPort, '127.0.0.1');

const answers = {
  initialize: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'oidc-peer', version: '1' } },
  'tools/list': { tools: [{ name: 'whoami', inputSchema: { type: 'object' } }] },
};

http.createServer(async (req, res) => {
  const send = (status, body, headers = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(body === undefined ? '' : JSON.stringify(body));
  };
  const path = req.url.split('?')[0];
  if (path === '/.well-known/oauth-protected-resource/mcp') {
    return send(200, { resource, authorization_servers: [issuer], scopes_supported: ['mcp'] });
  }
  if (path !== '/mcp') return send(404, { error: 'not_found' });
  if (req.method !== 'POST') return send(405, { error: 'POST only' });
  const auth = req.headers.authorization || '';
  const token = auth.startsWith('Bearer ') ? await provider.AccessToken.find(auth.slice(7)) : undefined;
  if (!token || token.aud !== resource) {
    return send(401, { error: 'invalid_token' }, { 'www-authenticate': `Bearer resource_metadata="${metadata}"` });
  }
  let raw = '';
  for await (const chunk of req) raw += chunk;
  const message = JSON.parse(raw);
  if (message.id === undefined) return send(202);
  if (message.method === 'tools/call') {
    return send(200, { jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: token.accountId }] } });
  }
  if (message.method in answers) return send(200, { jsonrpc: '2.0', id: message.id, result: answers[message.method] });
  return send(200, { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: `no ${message.method}` } });
}).listen(mcpPort, '127.0.0.1');
