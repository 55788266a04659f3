import { z } from 'zod';
import { BULK_ROW_STATUSES, BULK_SEND_STATUSES } from '../../db/schema/bulk-sends.js';
import { ZFromTemplate } from '../templates/templates.schemas.js';

/** A prefilled value is a field's text: bounded like any text a signer could type. */
export const MAX_PREFILL_CHARS = 1000;

/**
 * One row: a from-template body (recipients by slot id, title, meta, expiresAt, storageExpiryDays),
 * always sent (each row is one create-and-send), plus `prefill`, values for template fields by fieldId.
 */
export const ZBulkRow = ZFromTemplate.omit({ sendImmediately: true }).extend({
  prefill: z
    .record(z.string().max(20), z.string().max(MAX_PREFILL_CHARS))
    .optional()
    .describe('Values for template fields, by fieldId (as a string): "3": "ACME Ltd". Every key must be a field of the template.'),
});
export type TBulkRow = z.infer<typeof ZBulkRow>;

/** The JSON body. Rows are checked one by one (a bad row is refused, not the batch): here only the list's shape. */
export const ZBulkSendBody = z.object({
  rows: z.array(z.looseObject({})).min(1).describe('1..1,000 rows, each an object of the shape of BulkSendRow (its content is checked row by row); a CSV file instead: see the description'),
});

export const ZBulkSendIdParam = z.object({ id: z.string() });

const ZRowError = z.object({ code: z.string(), message: z.string() });

export const ZRefusedRow = z.object({ index: z.number().int(), code: z.string(), message: z.string() }).meta({ id: 'BulkSendRefusedRow' });

export const ZBulkSendRowResult = z
  .object({
    index: z.number().int().describe('0-based position of the row in the request (a CSV file: the data line after the header, from 0)'),
    status: z.enum(BULK_ROW_STATUSES),
    envelopeId: z.uuid().nullable(),
    error: ZRowError.nullable(),
  })
  .meta({ id: 'BulkSendRow' });

export const ZBulkSendCounts = z.object({
  total: z.number().int().describe('Rows received'),
  accepted: z.number().int().describe('Rows queued (total − refused)'),
  refused: z.number().int().describe('Rows refused when the request was checked: never created, never charged'),
  pending: z.number().int().describe('Accepted rows not created yet'),
  created: z.number().int().describe('Envelopes created and sent (each charged as one create-and-send)'),
  failed: z.number().int().describe('Rows a rule refused at creation (nothing charged)'),
  skipped: z.number().int().describe('Rows not created because the bulk send was cancelled (nothing charged)'),
});

export const ZBulkSendSummary = z
  .object({
    bulkSendId: z.uuid(),
    templateId: z.uuid(),
    status: z.enum(BULK_SEND_STATUSES),
    testMode: z.boolean(),
    counts: ZBulkSendCounts,
    createdAt: z.string(),
    endedAt: z.string().nullable().describe('When it completed or was cancelled'),
  })
  .meta({ id: 'BulkSendSummary' });

export const ZBulkSend = ZBulkSendSummary.extend({
  rows: z.array(ZBulkSendRowResult).describe('A page of the rows, by index (rowsLimit/rowsOffset)'),
  rowsLimit: z.number().int(),
  rowsOffset: z.number().int(),
}).meta({ id: 'BulkSend' });
export type TBulkSend = z.infer<typeof ZBulkSend>;

export const ZBulkSendQuery = z.object({
  rowsLimit: z.coerce.number().int().min(0).max(1000).optional().describe('Rows shown, 0..1000, default 100'),
  rowsOffset: z.coerce.number().int().min(0).max(1_000_000).optional().describe('Rows skipped, default 0'),
});
