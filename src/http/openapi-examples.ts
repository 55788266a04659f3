/**
 * Request examples written by hand, by operationId, where a rule the JSON Schema cannot express (at
 * least one key, a field's coordinates, known event names) would make a sampled example one the
 * server refuses. test/openapi-document.test.ts validates them against their schemas like the rest.
 */
const field = { type: 'SIGNATURE', recipientEmail: 'ada@example.com', page: 1, positionX: 10, positionY: 70, width: 25, height: 6 };
const recipients = [{ email: 'ada@example.com', name: 'Ada Lovelace', role: 'SIGNER', locale: 'en' }];

/** Field rules (docs/conditional-fields.md): a box, a field shown only when it is ticked, a read-only value. */
const ruled = [
  { type: 'CHECKBOX', ref: 'po', required: false, recipientEmail: 'ada@example.com', page: 1, positionX: 10, positionY: 40, width: 3, height: 2.5 },
  { type: 'TEXT', label: 'Purchase order number', placeholder: 'PO-12345', validation: { pattern: 'PO-[0-9]{5}' }, visibleWhen: { fieldId: 'po', equals: true }, recipientEmail: 'ada@example.com', page: 1, positionX: 15, positionY: 40, width: 30, height: 4 },
  { type: 'TEXT', label: 'Company', readOnly: true, value: 'Analytical Engines Ltd', recipientEmail: 'ada@example.com', page: 1, positionX: 10, positionY: 50, width: 30, height: 4 },
];

export const REQUEST_EXAMPLES: Record<string, unknown> = {
  createEnvelope: { pdf: '<PDF bytes>', payload: { title: 'Mutual NDA', recipients, fields: [field, ...ruled], meta: { subject: 'Please sign the NDA' }, reminders: { firstAfterDays: 3, everyDays: 2, max: 3 }, expiryWarningDays: 2 } },
  createDraftEnvelope: { pdf: '<PDF bytes>', payload: { title: 'Mutual NDA', recipients } },
  createTemplate: { file: '<PDF bytes>', payload: { title: 'Mutual NDA', recipients, fields: [field] } },
  addEnvelopeFields: { fields: [field] },
  updateEnvelopeField: { positionXPercent: 12.5, positionYPercent: 80, widthPercent: 25 },
  addTemplateFields: { fields: [{ type: 'SIGNATURE', recipientId: 1, page: 1, positionX: 10, positionY: 70, width: 25, height: 6 }] },
  updateTemplateField: { positionXPercent: 12.5, positionYPercent: 80, widthPercent: 25 },
  createEnvelopeFromTemplate: { recipients: [{ id: 1, email: 'ada@example.com', name: 'Ada Lovelace' }], prefill: { '2': 'Analytical Engines Ltd' } },
  updateAccount: { displayName: 'Analytical Engines Ltd', defaultLocale: 'en', reminders: { firstAfterDays: 3, everyDays: 2, max: 3 }, expiryWarningDays: 2 },
  setAccountLogo: { file: '<PNG or JPEG bytes>' },
  updateTemplate: { title: 'Mutual NDA (2026)' },
  createWebhook: { url: 'https://example.com/hooks/signet', events: ['envelope.completed', 'envelope.rejected', 'envelope.reminder_sent'] },
  updateWebhook: { active: false },
  sendEnvelope: { meta: { subject: 'Please sign the NDA' } },
  createBulkSend: {
    rows: [
      { recipients: [{ id: 1, email: 'ada@example.com', name: 'Ada Lovelace' }], meta: { subject: 'Your NDA, Ada' }, prefill: { '2': 'Analytical Engines Ltd' } },
      { recipients: [{ id: 1, email: 'charles@example.com', name: 'Charles Babbage' }], title: 'Mutual NDA: Babbage' },
    ],
  },
  reassignRecipient: { name: 'Grace Hopper', email: 'grace@example.com' },
  verifyAuthSignature: { walletAddress: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed', nonce: 'a1b2c3d4e5f6a7b8', signature: '0x…' },
};
