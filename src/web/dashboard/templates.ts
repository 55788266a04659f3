/** GET /dashboard/templates: the account's live templates, newest first, each with a link to its field editor. */
import { escapeHtml, scrollTable, when } from './layout.js';
import { emptyState, pageHeader, pager } from './parts.js';

export type TemplateListView = {
  page: number;
  perPage: number;
  total: number;
  rows: { templateId: string; title: string; recipients: { id: number; name: string; role: string }[]; updatedAt: string }[];
};

export function templateListPage(v: TemplateListView): string {
  const rows = v.rows.map((t) => [
    escapeHtml(t.title),
    t.recipients.map((s) => `${s.id}: ${escapeHtml(s.name)} <small>(${escapeHtml(s.role)})</small>`).join('<br>'),
    when(t.updatedAt),
    `<a href="/dashboard/templates/${escapeHtml(t.templateId)}/prepare">Edit fields<span class="visually-hidden"> of ${escapeHtml(t.title)}</span></a>`,
  ]);
  const body = v.rows.length
    ? scrollTable(['Title', 'Recipient slots', 'Updated', 'Fields'], rows) + pager({ path: '/dashboard/templates', params: {}, page: v.page, perPage: v.perPage, total: v.total, noun: ['template', 'templates'] })
    : v.total > 0
      ? `<p>There is no page ${v.page}. <a href="/dashboard/templates">Back to the first page</a></p>`
      : emptyState('No templates yet', '<p>Templates you create with <code>POST /v1/templates</code> show up here; place their fields by sight with Edit fields.</p>');
  return `${pageHeader({ title: 'Templates', lead: 'Saved PDFs with recipient slots and fields, newest first. Envelopes made from a template carry its fields.' })}
${body}`;
}
