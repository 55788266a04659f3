/**
 * The MCP scenario of `npm run bench`: `tools/call get_envelope_status` over POST /mcp against REST
 * GET /v1/envelopes/{id}/status, the same envelope, the same server, the same run. The MCP call does
 * the same service work plus the JSON-RPC framing and a transport per request on a kept McpServer (the
 * endpoint is stateless); the goal is at least half of REST's requests per second.
 */
import type { LoadRequest } from './load.js';
import { authed, multipart, postEnvelope, textPdf, type Client } from './requests.js';

/** A sent envelope (one signer, one field) to read the status of. */
export async function sentEnvelope(c: Client): Promise<string> {
  const mp = await multipart({
    pdf: { bytes: await textPdf(1, 'Bench status'), filename: 'status.pdf', type: 'application/pdf' },
    payload: JSON.stringify({
      title: 'Bench status',
      recipients: [{ email: 'status@example.com', name: 'Status', role: 'SIGNER' }],
      fields: [{ type: 'SIGNATURE', recipientEmail: 'status@example.com', page: 1, positionX: 10, positionY: 70, width: 30, height: 6 }],
    }),
  });
  return (await postEnvelope(c, mp)).envelopeId;
}

/**
 * The two requests, each probed once so the bench never measures a stream of errors: REST must answer
 * 200, MCP a JSON-RPC result that is not a tool error and names the envelope.
 */
export async function statusRequests(c: Client): Promise<{ rest: LoadRequest; mcp: LoadRequest }> {
  const envelopeId = await sentEnvelope(c);
  const rest: LoadRequest = { url: `${c.base}/v1/envelopes/${envelopeId}/status`, method: 'GET', headers: authed(c) };
  const mcp: LoadRequest = {
    url: `${c.base}/mcp`,
    method: 'POST',
    headers: authed(c, { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }),
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_envelope_status', arguments: { envelopeId } } }),
  };
  const restProbe = await fetch(rest.url, { headers: rest.headers });
  if (restProbe.status !== 200) throw new Error(`REST status probe: ${restProbe.status} ${await restProbe.text()}`);
  await restProbe.arrayBuffer();
  const mcpProbe = await fetch(mcp.url, { method: 'POST', headers: mcp.headers, body: mcp.body as string });
  const text = await mcpProbe.text();
  const answer = mcpProbe.status === 200 ? (JSON.parse(text) as { result?: { isError?: boolean; structuredContent?: { envelopeId?: string } } }) : undefined;
  if (!answer?.result || answer.result.isError || answer.result.structuredContent?.envelopeId !== envelopeId) {
    throw new Error(`MCP status probe: ${mcpProbe.status} ${text.slice(0, 500)}`);
  }
  return { rest, mcp };
}

/** Whether POST /mcp is served at all (the endpoint may be switched off or not built in this tree). */
export async function mcpServed(base: string): Promise<boolean> {
  const res = await fetch(`${base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
  await res.arrayBuffer();
  return res.status !== 404;
}
