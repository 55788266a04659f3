import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { settingsPage, type SettingsForm, type SettingsView } from '../../web/dashboard/settings.js';
import { CONSENT_TEXT_MAX, DISPLAY_NAME_MAX, ZAccountSettingsPatch, type TAccountSettingsPatch } from '../account/account.schemas.js';
import type { AccountService } from '../account/account.service.js';
import { LOGO_MAX_BYTES, LOGO_MAX_SIDE, type LogoService } from '../account/logo.js';
import { logoPart } from '../account/logo.routes.js';
import { AppError } from '../../errors.js';
import { DEFAULT_CONSENT_TEXT } from '../signing/consent-text.js';
import { sessionActor, sessionContext } from './dashboard-http.js';
import type { DashboardSection } from './dashboard.routes.js';

const ZSettingsQuery = z.object({ saved: z.string().max(8).optional().catch(undefined) });

/** Browsers send a textarea's line breaks as CRLF; the text is stored with LF, as the API takes it. */
const lf = (s: string) => s.replace(/\r\n?/g, '\n');

/**
 * The form as the API's patch: every field is sent, so each is set. An empty address or consent text
 * means the default (null); the built-in text pasted back unchanged is the default too, so it follows
 * later improvements of the built-in text rather than freezing a copy.
 */
function patchOf(body: Record<string, string | undefined>): { form: SettingsForm; patch: Record<string, unknown> } {
  const form: SettingsForm = {
    displayName: body.displayName ?? '',
    notificationEmail: (body.notificationEmail ?? '').trim(),
    senderNotifications: body.senderNotifications === 'on',
    consentText: lf(body.consentText ?? ''),
    allowedOrigins: lf(body.allowedOrigins ?? ''),
    brandColor: (body.brandColor ?? '').trim(),
    defaultLocale: (body.defaultLocale ?? '').trim(),
  };
  const consent = form.consentText.trim();
  return {
    form,
    patch: {
      displayName: form.displayName,
      notificationEmail: form.notificationEmail === '' ? null : form.notificationEmail,
      senderNotifications: form.senderNotifications,
      consentText: consent === '' || consent === DEFAULT_CONSENT_TEXT ? null : form.consentText,
      allowedOrigins: form.allowedOrigins.split('\n').map((o) => o.trim()).filter(Boolean),
      brandColor: form.brandColor === '' ? null : form.brandColor,
      defaultLocale: form.defaultLocale === '' ? null : form.defaultLocale,
    },
  };
}

const MESSAGES: Record<string, string> = {
  displayName: `Enter a name of 1 to ${DISPLAY_NAME_MAX} characters, on one line.`,
  notificationEmail: 'Enter an email address like name@example.com, or leave it empty.',
  consentText: `Keep the text under ${CONSENT_TEXT_MAX.toLocaleString('en-US')} characters, without control characters.`,
};

/** GET /dashboard/settings and its form's POST, which saves through the same service as PATCH /v1/account. */
export function settingsSection(deps: { db: Db; account: Pick<AccountService, 'getAccount' | 'updateSettings'>; logo: Pick<LogoService, 'store' | 'remove'> }): DashboardSection {
  return (kit) => async (app) => {
    const config = { dashboard: 'session' as const };

    async function render(request: FastifyRequest, reply: FastifyReply, extra: { form?: SettingsForm; errors?: SettingsView['errors']; saved?: boolean; logoError?: string }) {
      const account = await deps.account.getAccount(deps.db, sessionActor(request.dashboardSession!));
      const body = settingsPage({
        csrf: kit.csrf.tokenFor(request, reply),
        email: account.email,
        form: extra.form ?? { displayName: account.displayName, notificationEmail: account.notificationEmail ?? '', senderNotifications: account.senderNotifications, consentText: account.consentText ?? '', allowedOrigins: account.allowedOrigins.join('\n'), brandColor: account.brandColor ?? '', defaultLocale: account.defaultLocale ?? '' },
        defaultConsentText: DEFAULT_CONSENT_TEXT,
        displayNameMax: DISPLAY_NAME_MAX,
        consentTextMax: CONSENT_TEXT_MAX,
        errors: extra.errors,
        // The path, not PUBLIC_URL's address: the dashboard's img-src is 'self', whatever host serves it.
        logo: { src: account.logoUrl && new URL(account.logoUrl).pathname, error: extra.logoError },
        logoMax: { kb: LOGO_MAX_BYTES / 1024, side: LOGO_MAX_SIDE },
      });
      return kit.render(request, reply, {
        title: 'Settings',
        active: 'settings',
        body,
        status: extra.errors || extra.logoError ? 400 : 200,
        flash: extra.saved ? { kind: 'ok', text: 'Settings saved.' } : undefined,
      });
    }

    app.get('/dashboard/settings', { config, schema: { querystring: ZSettingsQuery } }, async (request, reply) =>
      render(request, reply, { saved: (request.query as z.infer<typeof ZSettingsQuery>).saved !== undefined }),
    );

    app.post('/dashboard/settings', { config }, async (request, reply) => {
      const { form, patch } = patchOf((request.body ?? {}) as Record<string, string | undefined>);
      const parsed = ZAccountSettingsPatch.safeParse(patch);
      if (!parsed.success) {
        // Each refused field says what it needs next to itself; what was typed stays in the form.
        const errors: SettingsView['errors'] = {};
        for (const issue of parsed.error.issues) {
          const field = String(issue.path[0] ?? 'form') as keyof typeof errors;
          errors[field] ??= MESSAGES[field] ?? issue.message;
        }
        return render(request, reply, { form, errors });
      }
      await deps.db.transaction((tx) => deps.account.updateSettings(tx, sessionContext(request), parsed.data as TAccountSettingsPatch));
      return reply.redirect('/dashboard/settings?saved=1', 303);
    });

    // The same service as PUT /v1/account/logo; a refused file is said next to the file input.
    app.post('/dashboard/settings/logo', { config, schema: { consumes: ['multipart/form-data'] } }, async (request, reply) => {
      try {
        const stored = await deps.logo.store(sessionContext(request), logoPart(request.body));
        await deps.db.transaction((tx) => stored.commit(tx));
      } catch (err) {
        if (err instanceof AppError && err.status < 500 && err.code !== 'CSRF_TOKEN_INVALID') return render(request, reply, { logoError: err.message });
        throw err;
      }
      return reply.redirect('/dashboard/settings?saved=logo', 303);
    });

    app.post('/dashboard/settings/logo/remove', { config }, async (request, reply) => {
      await deps.db.transaction((tx) => deps.logo.remove(tx, sessionContext(request)));
      return reply.redirect('/dashboard/settings?saved=logo', 303);
    });
  };
}
