/** The one price table (SPEC.md "What the service does"). Amounts in micros. */
export const PRICES = {
  envelope_create: { micros: 100_000n, label: 'Create envelope' },
  envelope_send: { micros: 100_000n, label: 'Send draft envelope' },
  envelope_from_template: { micros: 100_000n, label: 'Create envelope from template' },
  verification_create: { micros: 500_000n, label: 'Create identity verification' },
} as const;

export type BillableOperation = keyof typeof PRICES;
