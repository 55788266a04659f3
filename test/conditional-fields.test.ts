/**
 * Conditional fields and field rules (issue 37, item 5): `visibleWhen` on a field makes it depend on a
 * CHECKBOX, RADIO or DROPDOWN of the same recipient; TEXT and NUMBER fields take a label, a placeholder,
 * validation and a sender's value (read-only or a default). The server decides visibility from the
 * submitted values: a hidden field is not required, not stamped, and a value sent for it is refused.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { bearer, createTestApp, testEngine, type TestApp } from './harness.js';
import { assertError, complete, createEnvelope, drain, envelopeBody, type Envelope, makePdf, multipart, newKey, person, PNG_DATA_URL, postMultipart, recipientToken, session, sigField, uniq } from './fixtures/envelopes.js';

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(() => t?.close());

const local = { skip: testEngine === 'documenso' ? "Signet's signing page: Documenso hosts its own (and refuses field rules)" : false };

const box = (y: number) => ({ page: 1, positionXPercent: 10, positionYPercent: y, widthPercent: 30, heightPercent: 4 });
const field = (email: string, type: string, y: number, extra: Record<string, unknown> = {}) => ({ type, recipientEmail: email, ...box(y), ...extra });

type Field = Envelope['fields'][number] & { ref?: string; label?: string; placeholder?: string; readOnly?: boolean; value?: string; validation?: Record<string, unknown>; visibleWhen?: { fieldId: number; equals: string } };

const create = (payload: Record<string, unknown>) => postMultipart(t, envelopeBody([pdf!], payload));
let pdf: Uint8Array | undefined;
before(async () => {
  pdf = await makePdf(1);
});

/** The text of a PDF, as pdftotext reads it. */
function pdftotext(bytes: Uint8Array): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'signet-cond-'));
  try {
    const file = path.join(dir, 'x.pdf');
    writeFileSync(file, bytes);
    return execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function signedText(env: Envelope): Promise<string> {
  await drain(t);
  const res = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download`, headers: bearer(t.customer.apiKey) });
  assert.equal(res.statusCode, 200, res.body);
  return pdftotext(res.rawPayload);
}

const sign = (token: string, fields: { fieldId: number; value?: string | null }[]) => complete(t, token, { fields, signature: { kind: 'drawn', image: PNG_DATA_URL } });
const byRef = (env: Envelope, ref: string) => (env.fields as Field[]).find((f) => f.ref === ref)!;

/** A signer with a checkbox `agree` and a required TEXT `details` shown only when it is ticked. */
async function conditional(extra: Record<string, unknown> = {}) {
  const s = person('cond');
  const env = await createEnvelope(t, {
    recipients: [s],
    fields: [
      sigField(s.email),
      field(s.email, 'CHECKBOX', 20, { ref: 'agree', required: false }),
      field(s.email, 'TEXT', 30, { ref: 'details', required: true, label: 'Your details', placeholder: 'e.g. a reference', visibleWhen: { fieldId: 'agree', equals: true }, ...extra }),
    ],
  });
  return { s, env, token: recipientToken(env, s.email), agree: byRef(env, 'agree'), details: byRef(env, 'details') };
}

describe('visibleWhen', () => {
  test('the envelope shows the rules, the condition naming the controlling fieldId; the session carries them', local, async () => {
    const { env, token, agree, details } = await conditional();
    assert.equal(agree.ref, 'agree');
    assert.deepEqual(details.visibleWhen, { fieldId: agree.fieldId, equals: 'true' });
    assert.equal(details.label, 'Your details');
    assert.equal(details.placeholder, 'e.g. a reference');
    const again = (await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}`, headers: bearer(t.customer.apiKey) })).json() as Envelope;
    assert.deepEqual((again.fields as Field[]).find((f) => f.fieldId === details.fieldId)!.visibleWhen, { fieldId: agree.fieldId, equals: 'true' });
    const s = (await session(t, token)).json() as { fields: { fieldId: number; visibleWhen?: unknown; label?: string; placeholder?: string }[] };
    const shown = s.fields.find((f) => f.fieldId === details.fieldId)!;
    assert.deepEqual(shown.visibleWhen, { fieldId: agree.fieldId, equals: 'true' });
    assert.equal(shown.label, 'Your details');
    assert.equal(shown.placeholder, 'e.g. a reference');
  });

  test('hidden (box not ticked): the required field is not needed, and a value sent for it is refused', local, async () => {
    const { token, agree, details } = await conditional();
    assertError(await sign(token, [{ fieldId: agree.fieldId, value: 'false' }, { fieldId: details.fieldId, value: 'SNEAKED-IN' }]), 400, 'FIELD_HIDDEN');
    const res = await sign(token, [{ fieldId: agree.fieldId, value: 'false' }]);
    assert.equal(res.statusCode, 200, res.body);
  });

  test('shown (box ticked): the required field is needed, then signed and stamped', local, async () => {
    const { env, token, agree, details } = await conditional();
    const missing = assertError(await sign(token, [{ fieldId: agree.fieldId, value: 'true' }]), 400, 'VALIDATION_ERROR');
    assert.match(JSON.stringify(missing.details), new RegExp(`fieldId=${details.fieldId}`));
    const res = await sign(token, [{ fieldId: agree.fieldId, value: 'true' }, { fieldId: details.fieldId, value: 'SHOWN-ANSWER' }]);
    assert.equal(res.statusCode, 200, res.body);
    assert.match(await signedText(env), /SHOWN-ANSWER/);
  });

  test('a hidden field is not stamped: a read-only value behind an unticked box stays off the sealed PDF', local, async () => {
    const s = person('stamp');
    const env = await createEnvelope(t, {
      recipients: [s],
      fields: [
        sigField(s.email),
        field(s.email, 'RADIO', 20, { ref: 'plan', options: ['basic', 'pro'] }),
        field(s.email, 'TEXT', 30, { readOnly: true, value: 'PRO-TERMS-APPLY', visibleWhen: { fieldId: 'plan', equals: 'pro' } }),
        field(s.email, 'TEXT', 40, { readOnly: true, value: 'BASIC-TERMS-APPLY', visibleWhen: { fieldId: 'plan', equals: 'basic' } }),
      ],
    });
    const plan = byRef(env, 'plan');
    const res = await sign(recipientToken(env, s.email), [{ fieldId: plan.fieldId, value: 'pro' }]);
    assert.equal(res.statusCode, 200, res.body);
    const text = await signedText(env);
    assert.match(text, /PRO-TERMS-APPLY/);
    assert.doesNotMatch(text, /BASIC-TERMS-APPLY/);
  });

  test('chains: a field behind a hidden field is hidden too', local, async () => {
    const s = person('chain');
    const env = await createEnvelope(t, {
      recipients: [s],
      fields: [
        sigField(s.email),
        field(s.email, 'CHECKBOX', 20, { ref: 'a', required: false }),
        field(s.email, 'DROPDOWN', 30, { ref: 'b', options: ['x', 'y'], visibleWhen: { fieldId: 'a', equals: 'checked' } }),
        field(s.email, 'TEXT', 40, { ref: 'c', visibleWhen: { fieldId: 'b', equals: 'y' } }),
      ],
    });
    const token = recipientToken(env, s.email);
    // b hidden (a unticked): its value, and so c's, count as absent: c is hidden and a value for it refused.
    assertError(await sign(token, [{ fieldId: byRef(env, 'c').fieldId, value: 'x' }]), 400, 'FIELD_HIDDEN');
    assert.equal((await sign(token, [])).statusCode, 200);
  });

  const refused: [string, (email: string, other: string) => unknown[], string][] = [
    ['an unknown ref', (e) => [field(e, 'TEXT', 30, { visibleWhen: { fieldId: 'nope', equals: 'x' } })], 'FIELD_CONDITION_INVALID'],
    ['an unknown numeric fieldId', (e) => [field(e, 'TEXT', 30, { visibleWhen: { fieldId: 999999, equals: 'x' } })], 'FIELD_CONDITION_INVALID'],
    ['a TEXT target', (e) => [field(e, 'TEXT', 20, { ref: 'txt' }), field(e, 'TEXT', 30, { visibleWhen: { fieldId: 'txt', equals: 'x' } })], 'FIELD_CONDITION_INVALID'],
    ["another recipient's checkbox", (e, o) => [field(o, 'CHECKBOX', 20, { ref: 'theirs' }), field(e, 'TEXT', 30, { visibleWhen: { fieldId: 'theirs', equals: true } })], 'FIELD_CONDITION_INVALID'],
    ['an option the radio lacks', (e) => [field(e, 'RADIO', 20, { ref: 'r', options: ['a', 'b'] }), field(e, 'TEXT', 30, { visibleWhen: { fieldId: 'r', equals: 'c' } })], 'FIELD_CONDITION_INVALID'],
    ['a checkbox equals that is not true/false/checked', (e) => [field(e, 'CHECKBOX', 20, { ref: 'c' }), field(e, 'TEXT', 30, { visibleWhen: { fieldId: 'c', equals: 'maybe' } })], 'FIELD_CONDITION_INVALID'],
    ['a cycle', (e) => [field(e, 'CHECKBOX', 20, { ref: 'p', visibleWhen: { fieldId: 'q', equals: true } }), field(e, 'CHECKBOX', 30, { ref: 'q', visibleWhen: { fieldId: 'p', equals: true } })], 'FIELD_CONDITION_INVALID'],
    ['itself', (e) => [field(e, 'CHECKBOX', 20, { ref: 'me', visibleWhen: { fieldId: 'me', equals: true } })], 'FIELD_CONDITION_INVALID'],
    [
      'a chain deeper than 5',
      (e) => ['d0', 'd1', 'd2', 'd3', 'd4', 'd5', 'd6'].map((ref, i) => field(e, 'CHECKBOX', 10 + i * 5, { ref, ...(i ? { visibleWhen: { fieldId: `d${i - 1}`, equals: true } } : {}) })),
      'FIELD_CONDITION_INVALID',
    ],
    ['a duplicate ref', (e) => [field(e, 'CHECKBOX', 20, { ref: 'dup' }), field(e, 'CHECKBOX', 30, { ref: 'dup' })], 'FIELD_CONDITION_INVALID'],
    ['an unsafe pattern', (e) => [field(e, 'TEXT', 30, { validation: { pattern: '(a+)+$' } })], 'FIELD_PATTERN_UNSAFE'],
    ['a repeated alternation', (e) => [field(e, 'TEXT', 30, { validation: { pattern: '(a|aa)*' } })], 'FIELD_PATTERN_UNSAFE'],
    ['quantifiers that multiply into polynomial backtracking', (e) => [field(e, 'TEXT', 30, { validation: { pattern: '\\d*\\d*\\d*\\d*x' } })], 'FIELD_PATTERN_UNSAFE'],
    ['a pattern on values longer than 200', (e) => [field(e, 'TEXT', 30, { validation: { pattern: '[a-z]+', maxLength: 500 } })], 'VALIDATION_ERROR'],
    ['a pattern that does not compile', (e) => [field(e, 'TEXT', 30, { validation: { pattern: '([a-z' } })], 'FIELD_PATTERN_UNSAFE'],
    ['an overlong pattern', (e) => [field(e, 'TEXT', 30, { validation: { pattern: 'a'.repeat(201) } })], 'VALIDATION_ERROR'],
    ['validation on a CHECKBOX', (e) => [field(e, 'CHECKBOX', 30, { validation: { maxLength: 3 } })], 'VALIDATION_ERROR'],
    ['min above max', (e) => [field(e, 'NUMBER', 30, { validation: { min: 5, max: 1 } })], 'VALIDATION_ERROR'],
    ['readOnly without a value', (e) => [field(e, 'TEXT', 30, { readOnly: true })], 'VALIDATION_ERROR'],
    ['a read-only value that breaks its own validation', (e) => [field(e, 'NUMBER', 30, { readOnly: true, value: '50', validation: { max: 10 } })], 'FIELD_VALUE_INVALID'],
  ];
  for (const [what, fields, code] of refused) {
    test(`a create with ${what} is refused: ${code}`, async () => {
      const s = person('bad');
      const o = person('other');
      assertError(await create({ recipients: [s, o], fields: [sigField(s.email), sigField(o.email), ...fields(s.email, o.email)] }), 400, code);
    });
  }

  test('a draft: added fields may name an existing fieldId; the controlling field cannot be removed while one depends on it', local, async () => {
    const s = person('draft');
    const draft = await createEnvelope(t, { recipients: [s], draft: true, fields: [sigField(s.email), field(s.email, 'CHECKBOX', 20, { ref: 'box' })] });
    const box = byRef(draft, 'box');
    const add = await t.app.inject({
      method: 'POST',
      url: `/v1/envelopes/${draft.envelopeId}/fields`,
      headers: { ...bearer(t.customer.apiKey), 'content-type': 'application/json', 'idempotency-key': newKey() },
      payload: JSON.stringify({ fields: [field(s.email, 'TEXT', 40, { visibleWhen: { fieldId: box.fieldId, equals: true } })] }),
    });
    assert.equal(add.statusCode, 200, add.body);
    assert.deepEqual(add.json().fields[0].visibleWhen, { fieldId: box.fieldId, equals: 'true' });
    const del = await t.app.inject({ method: 'DELETE', url: `/v1/envelopes/${draft.envelopeId}/fields/${box.fieldId}`, headers: { ...bearer(t.customer.apiKey), 'idempotency-key': newKey() } });
    assertError(del, 409, 'FIELD_HAS_DEPENDENTS');
  });
});

describe('validation and read-only values', () => {
  async function ruled() {
    const s = person('rules');
    const env = await createEnvelope(t, {
      recipients: [s],
      fields: [
        sigField(s.email),
        field(s.email, 'TEXT', 20, { ref: 'code', validation: { pattern: '[A-Z]{2}[0-9]{4}', minLength: 6, maxLength: 6 } }),
        field(s.email, 'NUMBER', 30, { ref: 'qty', validation: { min: 1, max: 10 } }),
        field(s.email, 'TEXT', 40, { ref: 'note', required: false, validation: { maxLength: 5 } }),
        field(s.email, 'TEXT', 50, { ref: 'ro', readOnly: true, value: 'SENDER-FIXED-42' }),
      ],
    });
    return { env, token: recipientToken(env, s.email), code: byRef(env, 'code'), qty: byRef(env, 'qty'), note: byRef(env, 'note'), ro: byRef(env, 'ro') };
  }

  test('each rule refuses with FIELD_VALUE_INVALID naming the rule; good values sign; the read-only value is stamped', local, async () => {
    const { env, token, code, qty, note, ro } = await ruled();
    const good = { [code.fieldId]: 'AB1234', [qty.fieldId]: '7', [note.fieldId]: 'ok' };
    const attempt = (over: Record<number, string>) => sign(token, Object.entries({ ...good, ...over }).map(([id, value]) => ({ fieldId: Number(id), value })));
    for (const [over, rule] of [
      [{ [code.fieldId]: 'ab1234' }, 'pattern'],
      [{ [qty.fieldId]: '11' }, 'max'],
      [{ [qty.fieldId]: '0' }, 'min'],
      [{ [note.fieldId]: 'toolong' }, 'maxLength'],
    ] as const) {
      const body = assertError(await attempt(over), 400, 'FIELD_VALUE_INVALID');
      assert.equal(body.details[0].rule, rule, JSON.stringify(body));
    }
    assertError(await attempt({ [ro.fieldId]: 'CHANGED' }), 400, 'FIELD_READ_ONLY');
    const s = (await session(t, token)).json() as { fields: { fieldId: number; value: string | null; readOnly?: boolean; validation?: unknown }[] };
    const shown = s.fields.find((f) => f.fieldId === ro.fieldId)!;
    assert.equal(shown.value, 'SENDER-FIXED-42');
    assert.equal(shown.readOnly, true);
    assert.deepEqual(s.fields.find((f) => f.fieldId === qty.fieldId)!.validation, { min: 1, max: 10 });
    // Sending the read-only value unchanged is accepted.
    const res = await attempt({ [ro.fieldId]: 'SENDER-FIXED-42' });
    assert.equal(res.statusCode, 200, res.body);
    const text = await signedText(env);
    assert.match(text, /SENDER-FIXED-42/);
    assert.match(text, /AB1234/);
  });

  test('a value over the bound is refused before any pattern runs', local, async () => {
    const { token, code } = await ruled();
    assertError(await sign(token, [{ fieldId: code.fieldId, value: 'A'.repeat(5000) }]), 400, 'VALIDATION_ERROR');
  });
});

describe('templates and prefill', () => {
  const postTemplate = (payload: unknown) => {
    const mp = multipart([
      { name: 'file', value: pdf!, filename: 't.pdf' },
      { name: 'payload', value: JSON.stringify(payload) },
    ]);
    return t.app.inject({ method: 'POST', url: '/v1/templates', headers: { ...bearer(t.customer.apiKey), 'content-type': mp.contentType }, payload: mp.body });
  };
  const fromTemplate = (id: string, body: unknown) =>
    t.app.inject({ method: 'POST', url: `/v1/templates/${id}/from-template`, headers: { ...bearer(t.customer.apiKey), 'content-type': 'application/json', 'idempotency-key': newKey() }, payload: JSON.stringify(body) });

  async function template() {
    const res = await postTemplate({
      title: 'Order form',
      recipients: [{ email: 'slot1@example.com', name: 'Buyer', role: 'SIGNER' }],
      fields: [
        { ...sigField('slot1@example.com') },
        field('slot1@example.com', 'CHECKBOX', 20, { ref: 'extra', required: false }),
        field('slot1@example.com', 'TEXT', 30, { ref: 'company', label: 'Company', validation: { maxLength: 40 } }),
        field('slot1@example.com', 'NUMBER', 40, { ref: 'amount', validation: { min: 1, max: 1000 } }),
        field('slot1@example.com', 'TEXT', 50, { ref: 'why', visibleWhen: { fieldId: 'extra', equals: true } }),
      ],
    });
    assert.equal(res.statusCode, 201, res.body);
    return res.json() as { templateId: string; fields: (Field & { recipientId: number })[] };
  }

  test('a template keeps the rules (conditions by template fieldId); prefill fills read-only values that are stamped', local, async () => {
    const tpl = await template();
    const f = (ref: string) => tpl.fields.find((x) => x.ref === ref)!;
    assert.deepEqual(f('why').visibleWhen, { fieldId: f('extra').fieldId, equals: 'true' });
    assert.equal(f('company').label, 'Company');
    const buyer = uniq('buyer');
    const res = await fromTemplate(tpl.templateId, { recipients: [{ id: 1, email: buyer, name: 'Buyer' }], prefill: { [String(f('company').fieldId)]: 'ACME-PREFILLED', [String(f('amount').fieldId)]: '250' } });
    assert.equal(res.statusCode, 201, res.body);
    const env = res.json() as Envelope;
    const company = byRef(env, 'company');
    assert.equal(company.readOnly, true);
    assert.equal(company.value, 'ACME-PREFILLED');
    assert.deepEqual(byRef(env, 'why').visibleWhen, { fieldId: byRef(env, 'extra').fieldId, equals: 'true' });
    const token = recipientToken(env, buyer);
    assertError(await sign(token, [{ fieldId: company.fieldId, value: 'OTHER' }]), 400, 'FIELD_READ_ONLY');
    const ok = await sign(token, [{ fieldId: byRef(env, 'extra').fieldId, value: 'false' }]);
    assert.equal(ok.statusCode, 200, ok.body);
    assert.match(await signedText(env), /ACME-PREFILLED/);
  });

  test('prefill is checked: an unknown or non-text field, or a value its rules refuse', async () => {
    const tpl = await template();
    const f = (ref: string) => tpl.fields.find((x) => x.ref === ref)!;
    const people = [{ id: 1, email: uniq('p'), name: 'P' }];
    assertError(await fromTemplate(tpl.templateId, { recipients: people, prefill: { '999': 'x' } }), 400, 'FIELD_PREFILL_INVALID');
    assertError(await fromTemplate(tpl.templateId, { recipients: people, prefill: { [String(f('extra').fieldId)]: 'true' } }), 400, 'FIELD_PREFILL_INVALID');
    assertError(await fromTemplate(tpl.templateId, { recipients: people, prefill: { [String(f('amount').fieldId)]: '5000' } }), 400, 'FIELD_VALUE_INVALID');
    assertError(await fromTemplate(tpl.templateId, { recipients: people, prefill: { [String(f('company').fieldId)]: 'x'.repeat(41) } }), 400, 'FIELD_VALUE_INVALID');
  });
});

describe('the Documenso engine', () => {
  test('refuses field rules with NOT_SUPPORTED_BY_ENGINE', async () => {
    const { startDocumensoStandin } = await import('./fixtures/documenso-standin.js');
    const standin = await startDocumensoStandin();
    let d: TestApp | undefined;
    try {
      d = await createTestApp({ env: { SIGNING_ENGINE: 'documenso', DOCUMENSO_URL: standin.url, DOCUMENSO_API_KEY: standin.apiKey, DOCUMENSO_WEBHOOK_SECRET: 'whsec-conditional-fields-test' } });
      const s = person('doc');
      const mp = envelopeBody([pdf!], { recipients: [s], fields: [sigField(s.email), field(s.email, 'TEXT', 30, { validation: { maxLength: 5 } })] });
      const res = await d.app.inject({ method: 'POST', url: '/v1/envelopes', headers: { ...bearer(d.customer.apiKey), 'content-type': mp.contentType, 'idempotency-key': newKey() }, payload: mp.body });
      const body = assertError(res, 400, 'NOT_SUPPORTED_BY_ENGINE');
      assert.match(body.error, /validation/);
    } finally {
      await d?.close();
      await standin.close();
    }
  });
});
