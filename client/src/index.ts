export { Signet, type SignetOptions, type CallOptions, type CreateEnvelopeInput, type CreateTemplateInput, type Schemas } from './signet.js';
export { SignetError, SignetWebhookError } from './errors.js';
export { verifyWebhook, SIGNATURE_HEADER, type VerifyWebhookInput } from './webhooks.js';
export type { FileInput } from './upload.js';
export type { paths, components, operations } from './schema.js';
