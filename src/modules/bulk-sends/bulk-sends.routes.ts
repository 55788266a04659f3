import { readFile } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Db } from '../../db/client.js';
import type { ErrorCode } from '../../errors.js';
import { AppError } from '../../errors.js';
import { requestContext } from '../../http/auth.js';
import type { CommitMutation } from '../../http/idempotency.js';
import type { MultipartBody } from '../../http/multipart.js';
import { ZPage, ZPagingQuery, resolvePaging, toPage } from '../../http/paging.js';
import { CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, INPUT_ERRORS, JSON_BODY_ERRORS, SECURITY, errorResponses } from '../../http/route-docs.js';
import { sha256Hex } from '../../lib/crypto.js';
import { ZTemplateIdParam } from '../templates/templates.schemas.js';
import { csvRows } from './bulk-csv.js';
import { ZBulkRow, ZBulkSend, ZBulkSendBody, ZBulkSendIdParam, ZBulkSendQuery, ZBulkSendSummary, ZRefusedRow } from './bulk-sends.schemas.js';
import type { BulkSendsService } from './bulk-sends.service.js';
import { z } from 'zod';

export type BulkSendRouteDeps = { db: Db; bulkSends: BulkSendsService; commitMutation: CommitMutation; maxBytes: number; maxRows: number };

const CREATE_ERRORS: ErrorCode[] = ['INVALID_TEMPLATE_ID', 'TEMPLATE_NOT_FOUND', 'BULK_ROWS_REFUSED', 'INVALID_CSV', 'TOO_MANY_ROWS', 'INSUFFICIENT_BALANCE', 'SANDBOX_LIMIT_REACHED', 'IDEMPOTENCY_KEY_REQUIRED', 'X402_NOT_APPLICABLE'];
const ID_ERRORS: ErrorCode[] = ['BULK_SEND_NOT_FOUND'];

const DESCRIPTION = `Creates one envelope per row from the template, sent at once, in background jobs; answers 202 with the
bulk send (GET /v1/bulk-sends/{id} shows its progress and each row's envelope id or error).

**Rows.** Each row is a from-template body: \`recipients\` [{id, email, name}] mapping every slot, optional \`title\`,
\`meta\`, \`expiresAt\`, \`storageExpiryDays\`, plus \`prefill\` {"<fieldId>": "value"} for template fields. Up to 1,000
rows and BULK_SEND_MAX_BYTES (default 2 MiB) of body. Send them as JSON \`{"rows": [...]}\`, or as CSV: the body
itself with \`Content-Type: text/csv\`, or a multipart \`file\` part. CSV columns (a header line, then one line per
row; an empty cell is no value): \`recipients.<slotId>.email\`, \`recipients.<slotId>.name\`, \`title\`, \`expiresAt\`,
\`storageExpiryDays\`, \`meta.subject\`, \`meta.message\`, \`meta.redirectUrl\`, \`prefill.<fieldId>\`.

**Checks and money.** Every row is checked up front with from-template's rules; a refused row is listed in
\`refusedRows\` (index, code, message), never created and never charged; when every row is refused the answer is
422 BULK_ROWS_REFUSED with \`rows\`. The balance must cover every accepted row as one create-and-send (USD 0.10,
plus USD 0.50 per verificationRequired slot), or 402 before anything is created. Each envelope is charged when it
is created; a row the balance no longer covers then ends FAILED (INSUFFICIENT_BALANCE), uncharged. Test keys
make test envelopes (no real email), each counted against the sandbox allowance. One Idempotency-Key covers
the batch: the same key answers the same bulk send. A registration that names \`bulk_send.completed\` is told
when it ends.`;

export function bulkSendsRoutes(deps: BulkSendRouteDeps) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const { bulkSends, commitMutation } = deps;
    const tags = ['Bulk sends'];

    // A CSV body, bounded and hashed for the idempotency fingerprint like JSON (this plugin's routes only).
    app.addContentTypeParser('text/csv', { parseAs: 'string', bodyLimit: deps.maxBytes }, (request, body, done) => {
      request.bodyHash = sha256Hex(body as string);
      done(null, { csv: body as string });
    });

    /** The rows, from whichever body was sent. */
    async function rowsOf(body: unknown): Promise<unknown[]> {
      if (body && typeof body === 'object' && typeof (body as { csv?: unknown }).csv === 'string') return csvOf((body as { csv: string }).csv);
      const upload = body as MultipartBody | undefined;
      if (upload && Array.isArray(upload.files)) {
        const file = upload.files.find((f) => f.field === 'file');
        if (!file || file.size === 0) throw new AppError('VALIDATION_ERROR', 'The multipart body has no file part (the CSV)', { details: [{ path: 'body.file', message: 'required' }] });
        if (file.size > deps.maxBytes) throw new AppError('PAYLOAD_TOO_LARGE', `The CSV exceeds the ${deps.maxBytes}-byte limit`);
        return csvOf(await readFile(file.path, 'utf8'));
      }
      const parsed = ZBulkSendBody.safeParse(body);
      if (!parsed.success) {
        const details = parsed.error.issues.map((i) => ({ path: ['body', ...i.path.map(String)].join('.'), message: i.message }));
        throw new AppError('VALIDATION_ERROR', `${details[0].path}: ${details[0].message}`, { details });
      }
      return parsed.data.rows;
    }
    const csvOf = (text: string) => {
      if (text.includes('\u0000')) throw new AppError('VALIDATION_ERROR', 'Text may not hold the NUL character (U+0000)', { details: [{ path: 'body', message: 'NUL character' }] });
      return csvRows(text, deps.maxRows);
    };

    r.post('/v1/templates/:id/bulk-sends', {
      config: { auth: 'customer', idempotency: 'required' },
      bodyLimit: deps.maxBytes,
      schema: {
        operationId: 'createBulkSend',
        tags,
        summary: 'Send a template to up to 1,000 recipients or groups at once, one envelope per row (JSON or CSV)',
        description: DESCRIPTION,
        consumes: ['application/json', 'text/csv', 'multipart/form-data'],
        security: [...SECURITY.read],
        params: ZTemplateIdParam,
        body: ZBulkSendBody.extend({ rows: z.array(ZBulkRow).min(1).max(1000) }),
        response: {
          202: ZBulkSend.extend({ refusedRows: z.array(ZRefusedRow).describe('Every refused row: never created, never charged') }),
          422: z.looseObject({ error: z.string(), code: z.literal('BULK_ROWS_REFUSED'), rows: z.array(ZRefusedRow) }).describe('BULK_ROWS_REFUSED: every row was refused; rows lists them'),
          ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, JSON_BODY_ERRORS, IDEMPOTENCY_ERRORS, CREATE_ERRORS.filter((c) => c !== 'BULK_ROWS_REFUSED')),
        },
      },
      // Three body forms: checked by rowsOf (JSON's list shape) and then row by row; the schema above documents the JSON one.
      validatorCompiler: () => (data: unknown) => ({ value: data }),
      handler: async (request, reply) => {
        const ctx = requestContext(request);
        const plan = await bulkSends.plan(ctx, request.params.id, await rowsOf(request.body));
        return commitMutation(request, reply, async (tx) => ({ status: 202, body: await bulkSends.create(tx, ctx, plan) }));
      },
    });

    r.get('/v1/bulk-sends', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'listBulkSends',
        tags,
        summary: 'List bulk sends, newest first, with their counts',
        security: [...SECURITY.read],
        querystring: ZPagingQuery,
        response: { 200: ZPage(ZBulkSendSummary), ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS) },
      },
      handler: async (request) => {
        const paging = resolvePaging(request.query);
        const { rows, total } = await bulkSends.list(deps.db, requestContext(request), paging);
        return toPage(paging, rows, total);
      },
    });

    r.get('/v1/bulk-sends/:id', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'getBulkSend',
        tags,
        summary: "A bulk send's status, counts and a page of its rows (each row's envelope id or error)",
        description: 'status: QUEUED → RUNNING → COMPLETED, or CANCELLED. Rows are shown by index, 100 at a time by default (rowsLimit up to 1,000, rowsOffset).',
        security: [...SECURITY.read],
        params: ZBulkSendIdParam,
        querystring: ZBulkSendQuery,
        response: { 200: ZBulkSend, ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, ID_ERRORS) },
      },
      handler: (request) => bulkSends.get(deps.db, requestContext(request), request.params.id, { limit: request.query.rowsLimit ?? 100, offset: request.query.rowsOffset ?? 0 }),
    });

    r.post('/v1/bulk-sends/:id/cancel', {
      config: { auth: 'customer', idempotency: 'optional' },
      schema: {
        operationId: 'cancelBulkSend',
        tags,
        summary: 'Cancel a bulk send: rows not created yet are skipped and not charged',
        description: 'Envelopes already created are not touched (DELETE /v1/envelopes/{id} cancels one). A cancelled bulk send answers as it is; a completed one is 409 BULK_SEND_ENDED.',
        security: [...SECURITY.read],
        params: ZBulkSendIdParam,
        response: { 200: ZBulkSend, ...errorResponses(CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, ID_ERRORS, ['BULK_SEND_ENDED']) },
      },
      handler: (request, reply) => commitMutation(request, reply, async (tx) => ({ status: 200, body: await bulkSends.cancel(tx, requestContext(request), request.params.id) })),
    });
  };
}
