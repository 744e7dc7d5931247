// The recovery account (Installation administrators): the local-password administrator whose
// password always works, also when every provider is down. The designation moves to another
// qualifying account with the current holder and the target's version, so a concurrent change
// is refused rather than overwritten.

import * as api from '../api.js';
import { h, replace, announce } from '../dom.js';
import * as router from '../router.js';
import { errorPanel, isAbort } from '../components/errors.js';
import { field, showDetails } from '../components/form.js';
import { definitionList } from '../components/table.js';
import { confirmDialog } from '../components/dialog.js';

const DENIED = 'The recovery account needs installation:administer (moving it: every grant of the current holder\'s Principal).';

export default {
  title: 'Recovery account',
  namespaced: false,
  render(ctx) {
    const body = h('div', { class: 'recovery-region', 'aria-busy': 'true' }, h('p', { class: 'loading' }, 'Loading the recovery account…'));
    replace(ctx.main, h('h1', {}, 'Recovery account'),
      h('p', { class: 'lead' }, 'A local-password Installation administrator whose password always works, also when every sign-in provider is unavailable. It cannot be disabled. Keep its password in protected custody.'),
      body);
    let notice = null;

    async function load() {
      body.setAttribute('aria-busy', 'true');
      try {
        show(await api.get(api.paths.recovery, { signal: ctx.signal }));
      } catch (err) {
        if (isAbort(err)) return;
        replace(body, errorPanel(err, { denied: DENIED, retry: load }));
      }
      body.setAttribute('aria-busy', 'false');
    }

    function show(current) {
      const target = field({ label: 'New recovery account', name: 'userId', path: '/userId', required: true, autocomplete: 'off',
        hint: 'The account id (usr_…) of an enabled administrator with a local password.' });
      const failure = h('div');
      const submit = h('button', { type: 'submit', class: 'button' }, 'Move designation');
      const form = h('form', { class: 'form', novalidate: true }, target.row, failure, h('div', { class: 'form-actions' }, submit));
      form.addEventListener('submit', async (event) => {
        event.preventDefault();
        replace(failure);
        const userId = target.control.value.trim();
        submit.disabled = true;
        try {
          // The version is the target account's, read now.
          const account = await api.get(api.paths.account(userId));
          const yes = await confirmDialog({ title: 'Move the recovery designation',
            message: [`${userId} becomes the recovery account; ${current.userId} stays an ordinary account.`], confirmLabel: 'Move designation' });
          if (!yes) { submit.disabled = false; return; }
          const { data } = await api.post(api.paths.recovery, { userId, expectedCurrentUserId: current.userId, expectedVersion: account.version });
          notice = data.changed ? `The recovery account is now ${data.userId}.` : `${data.userId} already is the recovery account.`;
          announce(notice);
          await load();
        } catch (err) {
          submit.disabled = false;
          const rest = showDetails([target], err.details);
          replace(failure, errorPanel(err, { denied: DENIED, details: rest, refresh: err.status === 409 || err.unknownOutcome ? () => { notice = null; load(); } : undefined }));
        }
      });
      replace(body,
        notice ? h('div', { class: 'alert success', role: 'status' }, h('p', { class: 'alert-lead' }, notice)) : null,
        definitionList([
          ['Account', h('a', { href: router.href(`/console/people/${current.userId}`) }, h('code', { class: 'recovery-user' }, current.userId))],
          ['Principal', h('code', {}, current.principalId)],
          ['Password method', h('code', {}, current.methodId)],
        ]),
        h('section', { class: 'card', 'aria-labelledby': 'move-recovery' }, h('h2', { id: 'move-recovery' }, 'Move the designation'), form));
    }
    load();
  },
};
