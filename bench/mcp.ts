/**
 * The MCP scenario of `npm run bench`: `tools/call get_envelope_status` over POST /mcp against REST
 * GET /v1/envelopes/{id}/status, the same envelope, the same server, the same run. The MCP call does
 * the same service work plus the JSON-RPC framing and a McpServer and transport per request (the
 * endpoint is stateless); the goal is at least half of REST's requests per second.
 */
import { PDF } from '@libpdf/core';
import type { SignetTarget } from './targets.js';

export type BenchRequest = { url: string; method: 'GET' | 'POST'; headers: Record<string, string>; body?: string };

/** A sent envelope (one signer, one field) to read the status of. */
async function sentEnvelope(signet: SignetTarget): Promise<string> {
  const pdf = PDF.create();
  pdf.addPage({ size: 'letter' }).drawText('Bench status', { x: 72, y: 700, size: 14 });
  const form = new FormData();
  form.append('pdf', new Blob([Buffer.from(await pdf.save())], { type: 'application/pdf' }), 'status.pdf');
  form.append(
    'payload',
    JSON.stringify({
      title: 'Bench status',
      recipients: [{ email: 'status@example.com', name: 'Status', role: 'SIGNER' }],
      fields: [{ type: 'SIGNATURE', recipientEmail: 'status@example.com', page: 1, positionX: 10, positionY: 70, width: 30, height: 6 }],
    }),
  );
  const res = await fetch(`${signet.origin}/v1/envelopes`, { method: 'POST', headers: { authorization: `Bearer ${signet.apiKey}`, 'idempotency-key': crypto.randomUUID() }, body: form });
  if (res.status !== 201) throw new Error(`bench envelope: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { envelopeId: string }).envelopeId;
}

/**
 * The two requests, each probed once so the bench never measures a stream of errors: REST must answer
 * 200, MCP a JSON-RPC result that is not a tool error and names the envelope.
 */
export async function mcpStatusRequests(signet: SignetTarget): Promise<{ rest: BenchRequest; mcp: BenchRequest }> {
  const envelopeId = await sentEnvelope(signet);
  const auth = { authorization: `Bearer ${signet.apiKey}` };
  const rest: BenchRequest = { url: `${signet.origin}/v1/envelopes/${envelopeId}/status`, method: 'GET', headers: auth };
  const mcp: BenchRequest = {
    url: `${signet.origin}/mcp`,
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_envelope_status', arguments: { envelopeId } } }),
  };
  const restProbe = await fetch(rest.url, { headers: rest.headers });
  if (restProbe.status !== 200) throw new Error(`REST status probe: ${restProbe.status} ${await restProbe.text()}`);
  const mcpProbe = await fetch(mcp.url, { method: 'POST', headers: mcp.headers, body: mcp.body });
  const text = await mcpProbe.text();
  const answer = mcpProbe.status === 200 ? (JSON.parse(text) as { result?: { isError?: boolean; structuredContent?: { envelopeId?: string } } }) : undefined;
  if (!answer?.result || answer.result.isError || answer.result.structuredContent?.envelopeId !== envelopeId) {
    throw new Error(`MCP status probe: ${mcpProbe.status} ${text.slice(0, 500)}`);
  }
  return { rest, mcp };
}

/** Whether POST /mcp is served at all (the endpoint may be switched off or not built in this tree). */
export async function mcpServed(signet: SignetTarget): Promise<boolean> {
  const res = await fetch(`${signet.origin}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
  await res.arrayBuffer();
  return res.status !== 404;
}
