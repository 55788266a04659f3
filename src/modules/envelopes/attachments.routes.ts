import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { requestContext } from '../../http/auth.js';
import { CUSTOMER_ERRORS, INPUT_ERRORS, SECURITY, errorResponses } from '../../http/route-docs.js';
import type { EnvelopeAttachments } from './envelope-attachments.js';
import { ZEnvelopeIdParam } from './envelopes.schemas.js';

const EXAMPLE = {
  id: '6f1c2a9e-3b7d-4e2a-9c1f-0a8b7c6d5e4f',
  fieldId: 42,
  recipientEmail: 'ada@example.com',
  name: 'passport.pdf',
  contentType: 'application/pdf',
  size: 183204,
  sha256: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
  uploadedAt: '2026-03-14T14:30:00.000Z',
};

export const ZAttachment = z
  .object({
    id: z.uuid().describe('The attachment id: GET …/attachments/{attachmentId} downloads it'),
    fieldId: z.number().int().describe('The FILE field it was uploaded to'),
    recipientEmail: z.string().describe('Who uploaded it'),
    name: z.string().describe("The uploader's file name, sanitised (no path or control characters; the extension its checked type has)"),
    contentType: z.enum(['application/pdf', 'image/png', 'image/jpeg']).describe('What the bytes are, checked in the sandbox'),
    size: z.number().int().describe('Bytes'),
    sha256: z.string().describe('Hex SHA-256 of the bytes as uploaded; the audit certificate prints it too'),
    uploadedAt: z.string().describe('ISO 8601'),
  })
  .meta({ example: EXAMPLE });

const ZAttachmentList = z.object({ envelopeId: z.uuid(), attachments: z.array(ZAttachment) }).meta({ example: { envelopeId: '0b7f4c1e-2d3a-4b5c-8d9e-1f2a3b4c5d6e', attachments: [EXAMPLE] } });
const ZAttachmentParam = ZEnvelopeIdParam.extend({ attachmentId: z.string().max(64) });

/** GET /v1/envelopes/{id}/attachments and …/{attachmentId}: the files signers attached to FILE fields. */
export function envelopeAttachmentsRoutes(deps: { db: Db; attachments: EnvelopeAttachments }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const tags = ['Envelopes'];

    r.get('/v1/envelopes/:id/attachments', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'listEnvelopeAttachments',
        tags,
        summary: "The files signers attached to the envelope's FILE fields",
        description: 'Each with its FILE field, uploader, sanitised name, checked type, size, SHA-256 and upload time, oldest first. A file replaced before its signer completed is not listed (its blob was deleted). Free.',
        security: [...SECURITY.read],
        params: ZEnvelopeIdParam,
        response: { 200: ZAttachmentList, ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, ['ENVELOPE_NOT_FOUND']) },
      },
      handler: async (request) => deps.attachments.list(deps.db, requestContext(request), request.params.id),
    });

    r.get('/v1/envelopes/:id/attachments/:attachmentId', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'downloadEnvelopeAttachment',
        tags,
        summary: 'One attached file (Content-Disposition: attachment)',
        description: 'The bytes as uploaded, with the checked Content-Type, `Content-Disposition: attachment` and `X-Content-Type-Options: nosniff`; `X-Checksum-SHA256` carries its SHA-256. Gone (410 DOCUMENT_PURGED) once retention deleted the envelope\'s files. Free.',
        security: [...SECURITY.read],
        params: ZAttachmentParam,
        produces: ['application/pdf', 'image/png', 'image/jpeg'],
        response: {
          200: z.string().describe('The file (application/pdf, image/png or image/jpeg)'),
          ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, ['ENVELOPE_NOT_FOUND', 'ATTACHMENT_NOT_FOUND', 'DOCUMENT_PURGED']),
        },
      },
      handler: async (request, reply) => {
        const { stream, size, attachment } = await deps.attachments.open(deps.db, requestContext(request), request.params.id, request.params.attachmentId);
        const ascii = attachment.name.replace(/[^\w.-]+/g, '_');
        return reply
          .type(attachment.contentType)
          .header('content-disposition', `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(attachment.name)}`)
          .header('x-content-type-options', 'nosniff')
          .header('content-security-policy', "default-src 'none'; sandbox")
          .header('x-checksum-sha256', attachment.sha256)
          .header('content-length', size)
          .header('cache-control', 'private, no-store')
          .send(stream as unknown as string);
      },
    });
  };
}
