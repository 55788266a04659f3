// Compiled, never run (npm run typecheck: client/tsconfig.json): the calls the tests and guides make,
// through the helpers and through the raw client, type-check against the generated schema.d.ts. A
// route or field renamed in the OpenAPI document breaks this file before it breaks a user.
import { Signet, SignetError, verifyWebhook, type Schemas } from '../src/index.js';

export async function everyResource(signet: Signet, pdf: Uint8Array): Promise<void> {
  // Envelopes
  const env: Schemas['Envelope'] = await signet.envelopes.create(
    { file: pdf, title: 'NDA', recipients: [{ email: 'ada@example.com', name: 'Ada', role: 'SIGNER' }], fields: [{ type: 'SIGNATURE', recipientEmail: 'ada@example.com', page: 1, positionX: 10, positionY: 70, width: 25, height: 6 }], meta: { subject: 'Sign' } },
    { idempotencyKey: 'order-42' },
  );
  const url: string = env.recipients[0].signingUrl;
  const draft = await signet.envelopes.createDraft({ file: './nda.pdf', recipients: [{ email: 'ada@example.com', name: 'Ada', role: 'SIGNER' }] });
  await signet.envelopes.addFields(draft.envelopeId, [{ type: 'SIGNATURE', recipientEmail: 'ada@example.com', page: 1, positionXPercent: 10, positionYPercent: 70, widthPercent: 25, heightPercent: 6 }]);
  await signet.envelopes.send(draft.envelopeId, { subject: 'Now' });
  const status: string = (await signet.envelopes.status(env.envelopeId)).status;
  for await (const e of signet.envelopes.all({ status: 'COMPLETED' })) void e.envelopeId;
  const bytes: Uint8Array = await signet.envelopes.download(env.envelopeId, { version: 'original' });
  await signet.envelopes.cancel(env.envelopeId);
  const raw = await signet.api.GET('/v1/envelopes/{id}', { params: { path: { id: env.envelopeId } } });
  void raw.data?.title;
  await signet.api.POST('/v1/envelopes/{id}/send', { params: { path: { id: env.envelopeId }, header: { 'idempotency-key': 'k-1' } }, body: {} });

  // Templates
  const tpl = await signet.templates.create({ file: pdf, title: 'T', recipients: [{ email: 'slot@example.com', name: 'Slot', role: 'SIGNER' }] });
  await signet.templates.createEnvelope(tpl.templateId, { recipients: [{ id: 1, email: 'grace@example.com', name: 'Grace' }], sendImmediately: false });
  await signet.templates.update(tpl.templateId, { title: 'T2' });
  (await signet.templates.list({ limit: 5 })).data.map((t) => t.templateId);
  await signet.api.GET('/v1/templates/{id}', { params: { path: { id: tpl.templateId } } });

  // Webhooks
  const wh = await signet.webhooks.create({ url: 'https://example.com/hooks', events: ['envelope.completed'] });
  const secret: string = wh.secret;
  (await signet.webhooks.deliveries(wh.id, { status: 'FAILED' })).data.map((d) => d.deliveryId);
  await signet.api.PUT('/v1/webhooks/{id}', { params: { path: { id: wh.id } }, body: { active: false } });
  const event = verifyWebhook<{ event: string }>({ body: '{}', signature: 't=1,v1=00', secret });
  void event.event;

  // Verifications
  const v = await signet.verifications.create({ type: 'email', email: 'ada@example.com' });
  const vs: string = (await signet.verifications.status(v.verificationId)).status;
  await signet.api.POST('/v1/verifications/{id}/cancel', { params: { path: { id: v.verificationId } } });

  // Account and documents
  const account = await signet.account.get();
  const balance: number = account.balanceMicros;
  await signet.account.update({ displayName: 'Ada' });
  await signet.api.GET('/v1/account/usage', { params: { query: { limit: 10 } } });
  const verdict = await signet.documents.verify(bytes);
  const sealed: boolean = verdict.status === 'SEALED';

  try {
    await signet.envelopes.get('missing');
  } catch (e) {
    if (e instanceof SignetError) void [e.status, e.code, e.message, e.details, e.requestId];
  }
  void [url, status, vs, balance, sealed];
}
