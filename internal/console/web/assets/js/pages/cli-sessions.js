// The signed-in person's own CLI sessions (occ login): which CLI, since and until when, the
// Namespace it is pinned to; revoking one ends it at once (the CLI's next call is refused).

import * as api from '../api.js';
import { h, replace, announce, formatTime, idText } from '../dom.js';
import * as router from '../router.js';
import { errorPanel, isAbort } from '../components/errors.js';
import { dataTable } from '../components/table.js';
import { confirmDialog } from '../components/dialog.js';

export default {
  title: 'CLI sessions',
  namespaced: false,
  render(ctx) {
    const list = h('div', { class: 'list-region', 'aria-busy': 'true' }, h('p', { class: 'loading' }, 'Loading CLI sessions…'));
    const failure = h('div');
    replace(ctx.main,
      h('div', { class: 'page-header' },
        h('h1', {}, 'CLI sessions'),
        h('div', { class: 'page-actions' },
          h('button', { type: 'button', class: 'button secondary', on: { click: () => load() } }, 'Refresh'),
          h('a', { class: 'button secondary', href: router.href('/console/cli-login') }, 'Approve occ login'))),
      h('p', { class: 'lead' }, 'Sessions of occ login you approved. Each acts as you and ends at the latest with the browser session that approved it.'),
      failure, list);

    const revoke = async (s) => {
      const yes = await confirmDialog({
        title: 'Revoke CLI session',
        message: [`${s.clientLabel} will be signed out at once; its next command is refused.`, 'Run occ login there to sign in again.'],
        confirmLabel: 'Revoke CLI session', danger: true,
      });
      if (!yes) return;
      replace(failure);
      try {
        await api.del(api.paths.cliSession(s.id));
        announce(`CLI session ${s.clientLabel} revoked.`);
      } catch (err) {
        replace(failure, errorPanel(err, { refresh: err.unknownOutcome ? () => load() : undefined }));
      }
      load();
    };

    async function load() {
      list.setAttribute('aria-busy', 'true');
      try {
        const sessions = await api.list(api.paths.cliSessions, { signal: ctx.signal });
        replace(list, dataTable({
          caption: 'CLI sessions', rows: sessions, rowKey: (s) => s.id,
          empty: 'No CLI session. Run occ login to start one.',
          columns: [
            { label: 'Client', cell: (s) => h('span', { class: 'client-label' }, s.clientLabel) },
            { label: 'Session', cell: (s) => idText(s.id) },
            { label: 'Signed in', cell: (s) => formatTime(s.createdAt) },
            { label: 'Ends', cell: (s) => formatTime(s.expiresAt) },
            { label: 'Namespace', cell: (s) => (s.namespaceId ? idText(s.namespaceId) : 'All you can access') },
            {
              label: 'Actions', className: 'actions',
              cell: (s) => h('button', { type: 'button', class: 'button secondary small', 'aria-label': `Revoke CLI session ${s.clientLabel}`, on: { click: () => revoke(s) } }, 'Revoke'),
            },
          ],
        }));
        list.setAttribute('aria-busy', 'false');
      } catch (err) {
        if (isAbort(err)) return;
        replace(list, errorPanel(err, { retry: load }));
        list.setAttribute('aria-busy', 'false');
      }
    }
    load();
  },
};
