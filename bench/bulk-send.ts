import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { authed, createTemplate, expectStatus, textPdf } from './requests.js';
import { createCustomer, startSignet, type DbKind } from './servers.js';

export type BulkResult = { rows: number; ms: number; created: number; failed: number };

/**
 * A bulk send of `rows` rows (2 slots each) to `signet serve` with its worker on, end to end: from the
 * POST until GET /v1/bulk-sends/{id} says COMPLETED (polled every 100 ms). The envelopes' invitations
 * are distributed by the same worker meanwhile, as in production.
 */
export async function measureBulkSend(kind: DbKind, databaseUrl: string | undefined, opts: { rows: number; logLevel: string }): Promise<BulkResult> {
  const server = await startSignet(kind, databaseUrl, { env: { LOG_LEVEL: opts.logLevel } });
  try {
    const { apiKey } = await createCustomer(server.base);
    const c = { base: server.base, apiKey };
    const templateId = await createTemplate(c, await textPdf(1));
    const rows = Array.from({ length: opts.rows }, (_, i) => ({
      recipients: [
        { id: 1, email: `bulk-a-${i}@example.com`, name: `A ${i}` },
        { id: 2, email: `bulk-b-${i}@example.com`, name: `B ${i}` },
      ],
      title: `Bulk ${i}`,
    }));
    const started = performance.now();
    const res = await fetch(`${c.base}/v1/templates/${templateId}/bulk-sends`, {
      method: 'POST',
      headers: authed(c, { 'content-type': 'application/json', 'idempotency-key': randomUUID() }),
      body: JSON.stringify({ rows }),
    });
    const { bulkSendId } = await expectStatus<{ bulkSendId: string }>(res, 202, 'POST /v1/templates/{id}/bulk-sends');
    for (;;) {
      const got = await expectStatus<{ status: string; counts: { created: number; failed: number } }>(await fetch(`${c.base}/v1/bulk-sends/${bulkSendId}?rowsLimit=0`, { headers: authed(c) }), 200, 'GET /v1/bulk-sends/{id}');
      if (got.status === 'COMPLETED' || got.status === 'CANCELLED') return { rows: opts.rows, ms: performance.now() - started, created: got.counts.created, failed: got.counts.failed };
      await sleep(100);
    }
  } finally {
    await server.stop();
  }
}
