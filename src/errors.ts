/**
 * Every machine code Signet answers with, its HTTP status and a one-line meaning. SPEC.md's Errors
 * table is the source; the statuses SPEC.md leaves open are chosen here and documented in the OpenAPI.
 */
export const ERROR_CODES = {
  // Authentication
  UNAUTHORIZED: [401, 'No credentials, or they did not resolve to a customer (unknown or revoked key).'],
  TOKEN_INVALID: [401, 'The bearer value is not a well-formed API key, or a JWT whose signature did not verify.'],
  INVALID_SIGNATURE: [401, 'A wallet or x402 signature did not recover the claimed address.'],
  INVALID_NONCE: [400, 'The sign-in nonce is unknown (400: the request names something that does not exist).'],
  CHALLENGE_EXPIRED: [401, 'The sign-in challenge expired (401: start a new sign-in).'],
  NONCE_ALREADY_USED: [401, 'The sign-in nonce was already used (401: a replay is an authentication failure).'],
  INVALID_WALLET_ADDRESS: [400, 'The wallet parameter is not 0x followed by 40 hex digits.'],
  MISSING_FIELDS: [400, 'The verify body lacks required fields.'],
  MISSING_AUTH: [401, 'No credentials on /v1/account/products.'],
  X402_NOT_APPLICABLE: [400, 'x402 payment is not accepted on this route, or for this call (a read, a test send, a verification gate).'],
  WALLET_JWT_REQUIRED: [403, 'This route accepts only a wallet JWT.'],
  FORBIDDEN: [403, 'The credentials are valid but not allowed on this route.'],
  CONTRACT_WALLET_UNSUPPORTED: [400, 'The signature is not a 65-byte EOA signature: smart-contract wallets (EIP-1271, ERC-6492) need an RPC, which wallet sign-in does not use.'],
  CSRF_TOKEN_INVALID: [403, 'A dashboard form or cookie-authenticated call without a valid CSRF token (reload the page and try again).'],
  PRODUCT_NOT_FOUND: [404, 'No such product: the one product that can be enabled is PRODUCT_ID (default service_id).'],
  // Dashboard sign-in (HTML pages)
  SIGN_IN_LINK_INVALID: [410, 'The dashboard sign-in link is unknown, was used already or is older than 15 minutes; ask for a new one.'],
  SIGN_IN_FLOW_INVALID: [400, 'The OpenID Connect callback does not match a sign-in started in this browser (no or another flow cookie, wrong state, used or older than 10 minutes); start again.'],
  SIGN_IN_REFUSED: [403, 'The sign-in provider refused the sign-in or it was cancelled there (providerError names its error code).'],
  SIGN_IN_FAILED: [400, "The sign-in provider's answer did not check out (a used or expired code, a wrong nonce or signature); start again."],
  SIGN_IN_EMAIL_MISSING: [400, 'The sign-in provider sent no email address, which a new account needs.'],
  SIGN_IN_PROVIDER_UNAVAILABLE: [503, 'The OpenID Connect provider cannot be reached or answered with an error; try again shortly.'],
  // Billing
  INSUFFICIENT_BALANCE: [402, 'The balance is below the price of the call; top up at topUpUrl.'],
  INSUFFICIENT_CREDITS: [402, "SPEC.md's alias of INSUFFICIENT_BALANCE on create-and-send; same condition and body."],
  SANDBOX_LIMIT_REACHED: [402, 'The free test-mode allowance (sandboxLimit) is used up.'],
  PAYMENT_REQUIRED: [402, 'x402: this call costs priceUsd; pay it as the PAYMENT-REQUIRED header describes and send PAYMENT-SIGNATURE.'],
  PAYMENT_INVALID: [402, "x402: the payment was refused (reason holds x402's reason: expired, wrong amount, receiver, asset or network, a reused authorization, signed for another call, or the settlement failed or named a transaction already on record)."],
  X402_NOT_CONFIGURED: [400, 'A payment header was sent but this server does not accept x402 payments (X402_* unset).'],
  // Request shape
  INVALID_JSON: [400, 'The body (or the multipart payload part) is not valid JSON.'],
  LOGO_INVALID: [400, 'The logo is not a PNG or JPEG whose header can be read, its bytes are not what its Content-Type says, or it declares more than 2000×2000 pixels.'],
  VALIDATION_ERROR: [400, 'A field failed validation; details names the field path. Text anywhere in a request may not hold the NUL character (U+0000).'],
  MISSING_PDF: [400, 'The multipart body lacks the pdf part.'],
  MISSING_FILE: [400, 'The upload lacks the file part: a template, or a document to verify (400, like MISSING_PDF).'],
  MISSING_PAYLOAD: [400, 'The multipart body lacks the payload part.'],
  INVALID_PDF: [400, 'The file is not a PDF, is damaged beyond repair, or is encrypted.'],
  OUT_OF_SCOPE_V1: [400, 'More than 10 signers or more than 10 documents in one envelope.'],
  UNSUPPORTED_MEDIA_TYPE: [415, 'The Content-Type is not one this route accepts; a file upload (multipart/form-data) is refused unread by every route that takes no document.'],
  PAYLOAD_TOO_LARGE: [413, 'The request body exceeds the limit (1 MiB for JSON, 256 KB for an account logo).'],
  PDF_TOO_LARGE: [413, 'The PDF exceeds MAX_PDF_BYTES.'],
  MCP_BATCH_TOO_LARGE: [400, 'A JSON-RPC batch on POST /mcp holds more messages than maxBatch (10); send the calls in several requests.'],
  NOT_FOUND: [404, 'No such route.'],
  METHOD_NOT_ALLOWED: [405, 'The route exists but not with this method; see the Allow header.'],
  RATE_LIMITED: [429, 'Too many requests in the window; retry after Retry-After seconds.'],
  IDEMPOTENCY_KEY_REQUIRED: [400, 'This billable operation requires an Idempotency-Key header.'],
  IDEMPOTENCY_KEY_INVALID: [400, 'The Idempotency-Key header is empty or longer than 255 characters.'],
  IDEMPOTENCY_KEY_IN_USE: [409, 'A request with this Idempotency-Key is still in progress; retry shortly.'],
  IDEMPOTENCY_KEY_REUSED: [422, 'This Idempotency-Key was used with a different request.'],
  // Envelopes
  ENVELOPE_NOT_FOUND: [404, 'No such envelope owned by the caller.'],
  CANNOT_DELETE_COMPLETED: [400, 'DELETE on a COMPLETED envelope.'],
  ENVELOPE_ALREADY_COMPLETE: [400, 'Resend on a COMPLETED envelope.'],
  ENVELOPE_CANCELLED: [400, 'Send or resend on a CANCELLED envelope.'],
  ALREADY_COMPLETED: [400, 'Send on an envelope that is not a DRAFT any more (400, like ENVELOPE_ALREADY_COMPLETE).'],
  ALL_SIGNED: [400, 'Resend when every recipient has signed.'],
  INVALID_STATE: [409, "The envelope's state does not allow this operation (e.g. resend before it was sent)."],
  ENVELOPE_NOT_COMPLETE: [400, 'Download of the signed PDF before COMPLETED.'],
  DOCUMENT_PURGED: [410, 'The documents passed their retention date and were deleted.'],
  DOWNLOAD_FAILED: [502, 'The signing engine returned an unexpected response for the PDF.'],
  RECIPIENT_NOT_FOUND: [404, 'A recipient named by the request is not on the envelope or template.'],
  FIELD_CREATION_FAILED: [502, 'The signing engine refused to add the fields.'],
  INVALID_FIELD_ID: [400, 'The field id is not a valid identifier.'],
  DELETE_FAILED: [502, 'The signing engine refused the field delete.'],
  SEND_FAILED: [502, 'The send failed at the signing engine.'],
  ENVELOPE_NOT_DRAFT: [409, 'Fields can be added or removed only while the envelope is a DRAFT; it was sent (or ended) already.'],
  NOT_SUPPORTED_BY_ENGINE: [400, "This server's signing engine cannot do this (SIGNING_ENGINE=documenso keeps the signing links itself, sends no automatic reminders and keeps no field rules or signer attachments); the message names the feature."],
  RECIPIENT_EMAIL_TAKEN: [409, 'Another recipient of this envelope already has this email address: a recipient cannot be replaced by, or hand over to, someone already on it.'],
  HANDOVER_LIMIT_REACHED: [409, 'This recipient was replaced or delegated as often as allowed (5 replacements and 3 delegations per recipient, 50 hand-overs per envelope).'],
  DELEGATION_NOT_ALLOWED: [403, 'The sender did not allow this envelope\'s recipients to hand it to someone else (allowDelegation), or this recipient cannot delegate now.'],
  // Field rules (conditional fields, validation, read-only values)
  FIELD_CONDITION_INVALID: [400, "A field's visibleWhen names no field of the envelope (ref or fieldId), one that is not a CHECKBOX, RADIO or DROPDOWN, another recipient's field, or a value it cannot take; or the conditions form a cycle, go deeper than 5, or two fields share a ref."],
  FIELD_PATTERN_UNSAFE: [400, "A field's validation.pattern does not compile, or its nested quantifiers could make matching take exponential time."],
  FIELD_VALUE_INVALID: [400, "A field's value breaks its validation (details[].rule names which: pattern, minLength, maxLength, min, max, number)."],
  FIELD_HIDDEN: [400, 'A value was sent for a field that is hidden by its visibleWhen condition given the values sent; send none for it.'],
  FIELD_READ_ONLY: [400, 'A value was sent for a read-only field that differs from the value the sender set.'],
  FIELD_PREFILL_INVALID: [400, 'A prefill key names no TEXT or NUMBER field of the template.'],
  FIELD_HAS_DEPENDENTS: [409, "The field controls another field's visibleWhen; remove or change that field first."],
  // Recipient signing (/sign/{token})
  SIGNING_LINK_INVALID: [404, 'The signing link is unknown or no longer valid.'],
  SIGNING_LINK_HANDED_OVER: [410, 'The recipient of this signing link handed the document to someone else: the link no longer opens it.'],
  PREPARE_LINK_INVALID: [404, 'The prepare link is unknown, expired, or its envelope is no longer a draft.'],
  NOT_YOUR_TURN: [409, 'Another recipient must act first (signing order).'],
  ALREADY_ACTED: [409, 'This recipient has already signed, approved or declined.'],
  CONSENT_REQUIRED: [409, 'This recipient must agree to use electronic records and signatures (POST /sign/{token}/consent) before signing, approving or filling fields; declining needs no consent.'],
  ENVELOPE_NOT_ACTIVE: [410, 'The envelope is completed, cancelled, expired or rejected; nothing more can be signed.'],
  RECIPIENT_VERIFICATION_REQUIRED: [403, 'This recipient must confirm their email address with an emailed code before the document is shown or can be signed or declined.'],
  // Signer attachments (FILE fields)
  ATTACHMENT_TYPE_UNSUPPORTED: [415, 'A signer attachment must be a PDF, PNG or JPEG; its bytes are none of them.'],
  ATTACHMENT_TYPE_MISMATCH: [422, "The attachment's bytes are not the type its Content-Type (or file name) claims."],
  ATTACHMENT_TOO_LARGE: [413, "The attachment exceeds SIGNER_ATTACHMENT_MAX_BYTES, or the envelope's attachments together would exceed SIGNER_ATTACHMENTS_MAX_TOTAL_BYTES."],
  ATTACHMENT_INVALID: [422, 'The attachment is damaged, encrypted, has too many pages, or cannot be read as the type it is.'],
  ATTACHMENT_BOMB: [422, 'The attachment decompresses beyond the bounds: a compressed stream that expands past the limit, or an image declaring more pixels than allowed.'],
  ATTACHMENT_LIMIT_REACHED: [429, 'This recipient uploaded attachments too many times (SIGNER_ATTACHMENT_MAX_UPLOADS per recipient).'],
  ATTACHMENT_NOT_FOUND: [404, 'No such attachment on this envelope.'],
  INVALID_FIELD_TYPE: [400, 'The field named is not of the type this route takes (a FILE field for attachments).'],
  // Templates
  TEMPLATE_NOT_FOUND: [404, 'No such template owned by the caller.'],
  INVALID_TEMPLATE_ID: [400, 'The template id is not a UUID.'],
  INVALID_ID: [400, 'The id in the path is not a valid identifier (400, like INVALID_TEMPLATE_ID).'],
  INVALID_TEMPLATE_RECIPIENT_ID: [400, 'A recipient id does not name a slot of the template.'],
  UPDATE_FAILED: [502, 'The template update failed at the signing engine.'],
  // Bulk sends
  BULK_SEND_NOT_FOUND: [404, 'No such bulk send owned by the caller.'],
  BULK_SEND_ENDED: [409, 'The bulk send has completed: there is nothing left to cancel.'],
  BULK_ROWS_REFUSED: [422, 'Every row of the bulk send was refused; `rows` lists each one with its index, code and message.'],
  INVALID_CSV: [400, 'The CSV body is malformed (an unclosed quote, a row with more cells than the header, an unknown or repeated column); details names the line.'],
  TOO_MANY_ROWS: [413, 'A bulk send takes at most 1,000 rows.'],
  // Operator API
  CUSTOMER_NOT_FOUND: [404, 'No such customer (operator API).'],
  API_KEY_NOT_FOUND: [404, 'No such API key for this customer (operator API, dashboard).'],
  API_KEY_LIMIT_REACHED: [409, 'The account already has the most active API keys allowed (20); revoke one before minting another (dashboard).'],
  JOB_NOT_FOUND: [404, 'No such job (operator API).'],
  REFUND_ALREADY_COMPLETED: [409, 'This wallet refund was completed already, with the txHash it names (operator API).'],
  JOB_NOT_DEAD: [409, 'Only a dead job can be queued again; this one is queued, running or done (operator API).'],
  // Webhooks
  INVALID_WEBHOOK_URL: [400, 'The webhook URL is malformed or deny-listed.'],
  WEBHOOK_NOT_FOUND: [404, 'No such webhook owned by the caller.'],
  WEBHOOK_DISABLED: [409, 'The webhook is disabled: enable it (PUT active: true) before sending it a test event or a redelivery.'],
  DELIVERY_NOT_FOUND: [404, 'No such delivery of this webhook.'],
  DELIVERY_PENDING: [409, 'The delivery is still being tried; redeliver it once it succeeded or failed.'],
  WEBHOOK_MANUAL_LIMIT: [429, 'Too many test events and redeliveries to this webhook in the last hour (limit names the cap); wait and try again.'],
  // Identity verifications
  VERIFICATION_NOT_FOUND: [404, 'No such verification owned by the caller (a malformed id is 404 too).'],
  ID_VERIFICATION_NOT_CONFIGURED: [400, 'type id_document needs Stripe Identity, and this server has no STRIPE_SECRET_KEY.'],
  VERIFICATION_LINK_INVALID: [404, 'The verification link is unknown or no longer valid.'],
  VERIFICATION_NOT_PENDING: [409, 'The verification is verified or canceled already; nothing more can be done with it.'],
  VERIFICATION_NOT_CANCELABLE: [409, "A signing recipient's verification belongs to its envelope and cannot be canceled on its own."],
  VERIFICATION_FAILED: [409, 'The verification failed (5 wrong codes); create a new one.'],
  VERIFICATION_EXPIRED: [410, 'The verification passed its expiresAt unverified; create a new one.'],
  INVALID_CODE: [400, 'The code is wrong; attemptsLeft says how many tries remain before the verification fails.'],
  CODE_EXPIRED: [400, 'No code is live (none was requested, it is older than 10 minutes, or a newer one replaced it); request a new code.'],
  CODE_RATE_LIMITED: [429, 'A code was sent recently; request the next one after Retry-After seconds.'],
  STRIPE_SIGNATURE_INVALID: [400, 'The Stripe-Signature header does not match the body (or is too old).'],
  // Upstreams
  DOCUMENSO_UNAVAILABLE: [503, 'The signing engine errored; retry with backoff and the same Idempotency-Key.'],
  IDENTITY_PROVIDER_UNAVAILABLE: [503, 'The identity provider (Stripe) errored; nothing was charged or stored; retry with the same Idempotency-Key.'],
  CARD_PROVIDER_UNAVAILABLE: [503, 'The card payment provider (Stripe Checkout) errored while starting a top-up; nothing was charged; try again later.'],
  RELAYSTATION_UNAVAILABLE: [503, 'The billing facilitator errored, or did not confirm a settle (transaction names it); nothing was done: retry with backoff, the same Idempotency-Key and a new payment.'],
  SERVICE_UNAVAILABLE: [503, 'The service cannot answer right now (database unreachable or busy, shutting down); retry after Retry-After.'],
  MCP_DISABLED: [503, 'The MCP endpoint is switched off on this server (MCP_ENABLED=false); use the REST API.'],
  INTERNAL_ERROR: [500, 'An unexpected error; logged with the request id.'],
} as const satisfies Record<string, readonly [number, string]>;

export type ErrorCode = keyof typeof ERROR_CODES;

export class AppError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly extras: Record<string, unknown>;
  readonly headers: Record<string, string>;
  constructor(
    code: ErrorCode,
    message: string,
    extras: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.code = code;
    this.extras = extras;
    this.headers = headers;
    this.name = 'AppError';
    this.status = ERROR_CODES[code][0];
  }
}
