import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';

type Types = typeof import('@modelcontextprotocol/sdk/types.js');

/**
 * MCP's Streamable HTTP for a stateless server that answers in JSON (no session, no SSE stream), with
 * the answers the SDK's own transport gives at its edges (test/mcp.test.ts pins them): 406 without both
 * answer types in Accept, 400 for a message that is not JSON-RPC, for an initialize in a batch or for
 * an unknown protocol version, 202 for notifications only, one answer for one request.
 *
 * Why not the SDK's: its Node transport turned every request into a web Request and wrote the answer
 * back from a web Response, about a quarter of a tools/call's CPU, and it had to be closed after each
 * request, which built an error with a stack trace for answers no one awaited (issue 38). This one stays
 * connected to its server and takes one request at a time: the body Fastify parsed goes to the server
 * as it is, and the server's answers are written as one JSON document.
 */
export class JsonTransport implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  readonly #types: Types;
  #pending: { ids: RequestId[]; answers: Map<RequestId, JSONRPCMessage>; done: () => void } | undefined;

  constructor(types: Types) {
    this.#types = types;
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.onclose?.();
  }

  /** The server's messages: answers to the request in hand are kept; a notification has no stream to go to here, as in the SDK's JSON mode. */
  async send(message: JSONRPCMessage): Promise<void> {
    const pending = this.#pending;
    const id = 'method' in message || !('id' in message) ? undefined : message.id;
    if (!pending || id === undefined || !pending.ids.includes(id)) return;
    pending.answers.set(id, message);
    if (pending.answers.size === pending.ids.length) pending.done();
  }

  /** Answers one POST: `body` is its parsed JSON. Resolves once the answer is written. */
  async handle(headers: IncomingHttpHeaders, res: ServerResponse, body: unknown, authInfo: AuthInfo): Promise<void> {
    const t = this.#types;
    const accept = headers.accept ?? '';
    if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
      return refuse(res, 406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream');
    }
    let messages: JSONRPCMessage[];
    try {
      messages = (Array.isArray(body) ? body : [body]).map((m) => t.JSONRPCMessageSchema.parse(m));
    } catch {
      return refuse(res, 400, -32700, 'Parse error: Invalid JSON-RPC message');
    }
    const initializing = messages.some((m) => t.isInitializeRequest(m));
    if (initializing && messages.length > 1) return refuse(res, 400, -32600, 'Invalid Request: Only one initialization request is allowed');
    const version = headers['mcp-protocol-version'];
    if (!initializing && typeof version === 'string' && !t.SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      return refuse(res, 400, -32000, `Bad Request: Unsupported protocol version: ${version} (supported versions: ${t.SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`);
    }
    const extra = { authInfo, requestInfo: { headers } };
    // Two requests of one batch under the same id are one request, as the SDK's transport counts them.
    const ids = [...new Set(messages.filter((m) => t.isJSONRPCRequest(m)).map((m) => (m as { id: RequestId }).id))];
    if (!ids.length) {
      for (const m of messages) this.onmessage?.(m, extra);
      res.writeHead(202).end();
      return;
    }
    const answers = new Map<RequestId, JSONRPCMessage>();
    const answered = new Promise<void>((done) => (this.#pending = { ids, answers, done }));
    try {
      for (const m of messages) this.onmessage?.(m, extra);
      await answered;
    } finally {
      this.#pending = undefined;
    }
    const out = ids.map((id) => answers.get(id));
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out.length === 1 ? out[0] : out));
  }
}

function refuse(res: ServerResponse, status: number, code: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}
