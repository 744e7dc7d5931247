// The audit trail (administrators): events newest first, filtered by Namespace, resource,
// actor and time, one page at a time. Filters live in the URL, so a filtered view can be
// shared and survives reload.

import * as api from '../api.js';
import { h, replace, formatTime, idText } from '../dom.js';
import * as router from '../router.js';
import { errorPanel, isAbort } from '../components/errors.js';
import { field } from '../components/form.js';
import { dataTable } from '../components/table.js';
import { badge } from '../components/status.js';

const FILTERS = ['namespaceId', 'resourceKind', 'resourceId', 'actorId', 'since', 'until'];
const PAGE = 50;

function toISO(local) {
  if (!local) return '';
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString().replace(/\.\d{3}Z$/, '.000Z');
}
function toLocal(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export default {
  title: 'Audit',
  namespaced: false,
  render(ctx) {
    const q = ctx.query;
    const nsOptions = [{ value: '', label: 'Any Namespace' }, ...ctx.namespaces.map((n) => ({ value: n.id, label: n.name }))];
    const fields = {
      namespaceId: field({ label: 'Namespace', name: 'namespaceId', kind: 'select', options: nsOptions, value: q.get('namespaceId') || '' }),
      resourceKind: field({ label: 'Resource kind', name: 'resourceKind', value: q.get('resourceKind') || '', hint: 'For example agent, secret, namespace.' }),
      resourceId: field({ label: 'Resource id', name: 'resourceId', value: q.get('resourceId') || '' }),
      actorId: field({ label: 'Actor id', name: 'actorId', value: q.get('actorId') || '', hint: 'A Principal (prn_…) or ServicePrincipal (spn_…).' }),
      since: field({ label: 'From', name: 'since', type: 'datetime-local', value: toLocal(q.get('since')) }),
      until: field({ label: 'Until', name: 'until', type: 'datetime-local', value: toLocal(q.get('until')) }),
    };
    const results = h('div', { 'aria-live': 'polite' });
    const form = h('form', { class: 'form filters', role: 'search' }, Object.values(fields).map((f) => f.row),
      h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'button' }, 'Apply filters'),
        h('button', { type: 'button', class: 'button secondary', on: { click: () => { for (const f of Object.values(fields)) f.control.value = ''; apply(); } } }, 'Clear')));
    replace(ctx.main, h('h1', {}, 'Audit'),
      h('p', { class: 'lead' }, 'Every change, sign-in and refused request, newest first.'), form, results);
    const cursors = [];

    function values() {
      const v = {};
      for (const k of FILTERS) {
        const raw = fields[k].control.value.trim();
        v[k] = k === 'since' || k === 'until' ? toISO(raw) : raw;
      }
      return v;
    }
    function apply() {
      router.setQuery({ ...values(), cursor: null });
      cursors.length = 0;
      load('');
    }
    form.addEventListener('submit', (e) => { e.preventDefault(); apply(); });

    async function load(cursor) {
      replace(results, h('p', { class: 'loading' }, 'Loading events…'));
      let page;
      try {
        page = await api.request('GET', api.paths.auditEvents, { query: { ...values(), limit: PAGE, cursor }, signal: ctx.signal });
      } catch (err) {
        if (!isAbort(err)) replace(results, errorPanel(err, { denied: 'The audit trail is for administrators (installation:administer).', retry: () => load(cursor) }));
        return;
      }
      const events = page.data || [];
      const next = page.meta && page.meta.nextCursor;
      const nav = h('div', { class: 'pager' },
        h('button', { type: 'button', class: 'button secondary', disabled: !cursors.length, on: { click: () => { cursors.pop(); load(cursors.length ? cursors[cursors.length - 1] : ''); } } }, 'Newer'),
        h('span', { class: 'hint' }, `Page ${cursors.length + 1}`),
        h('button', { type: 'button', class: 'button secondary', disabled: !next, on: { click: () => { cursors.push(next); load(next); } } }, 'Older'));
      replace(results, dataTable({
        caption: 'Audit events', rows: events, rowKey: (e) => e.id, empty: 'No event matches these filters.',
        columns: [
          { label: 'Time', cell: (e) => formatTime(e.occurredAt) },
          { label: 'Actor', cell: (e) => idText(e.actorId) },
          { label: 'Action', cell: (e) => h('code', {}, e.action) },
          { label: 'Resource', cell: (e) => [`${e.resource.kind} `, idText(e.resource.id)] },
          { label: 'Outcome', cell: (e) => [badge(e.outcome === 'success' ? 'succeeded' : 'failed', e.outcome), e.reasonCode ? [' ', h('code', {}, e.reasonCode)] : null] },
        ],
      }), nav);
    }
    load('');
  },
};
