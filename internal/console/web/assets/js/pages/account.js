// One account's sign-in state for Installation administrators: disable, enable, revoke its
// sessions, enrol, detach an identity and attach a GitHub, Google or OIDC identity. Every change
// sends the version this page read, so a change made meanwhile is refused (409) and shown with its
// code; the page then offers to read the account again, never to repeat the change.

import * as api from '../api.js';
import { h, replace, announce } from '../dom.js';
import * as router from '../router.js';
import { errorPanel, isAbort } from '../components/errors.js';
import { field } from '../components/form.js';
import { dataTable, definitionList } from '../components/table.js';
import { confirmDialog } from '../components/dialog.js';
import { badge } from '../components/status.js';
import { PROVIDER_TITLES } from '../components/signinflow.js';

const DENIED = 'Account controls need installation:administer and every grant of the account\'s Principal.';

function methodName(providerId) {
  if (providerId === 'credential') return 'Password';
  return PROVIDER_TITLES[providerId.split(':')[0]] || providerId;
}

// instanceText shortens the provider instance digest; the full value is the tooltip.
function instanceText(providerId) {
  const [name, digest] = providerId.split(':');
  return digest && digest.length > 12 ? `${name}:${digest.slice(0, 12)}…` : providerId;
}

export default {
  title: 'Account',
  namespaced: false,
  render(ctx) {
    const userId = ctx.params.userId;
    const body = h('div', { class: 'account-region', 'aria-busy': 'true' }, h('p', { class: 'loading' }, 'Loading the account…'));
    replace(ctx.main,
      h('div', { class: 'page-header' },
        h('h1', {}, 'Account'),
        h('div', { class: 'page-actions' },
          h('a', { class: 'button secondary', href: router.href('/console/people') }, 'People'),
          h('a', { class: 'button secondary', href: router.href('/console/recovery') }, 'Recovery account'))),
      body);
    let notice = null;

    async function load() {
      body.setAttribute('aria-busy', 'true');
      try {
        const [account, providers] = await Promise.all([
          api.get(api.paths.account(userId), { signal: ctx.signal }),
          api.get(api.paths.providers, { signal: ctx.signal }),
        ]);
        show(account, providers);
      } catch (err) {
        if (isAbort(err)) return;
        replace(body, errorPanel(err, { denied: DENIED, retry: load }));
      }
      body.setAttribute('aria-busy', 'false');
    }

    function show(account, providers) {
      const failure = h('div', { class: 'action-failure' });
      // send makes one change with the version read (enrol takes none); success reads the
      // account again. what is the notice, or a function of the answer.
      const send = async (what, path, extra = {}, { versioned = true } = {}) => {
        replace(failure);
        for (const b of body.querySelectorAll('button')) b.disabled = true;
        try {
          const { data } = await api.post(path, versioned ? { ...extra, expectedVersion: account.version } : extra);
          notice = typeof what === 'function' ? what(data) : what;
          announce(notice);
          await load();
        } catch (err) {
          for (const b of body.querySelectorAll('button')) b.disabled = false;
          const stale = err.status === 409 && /changed since it was read/.test(err.message || '');
          replace(failure, errorPanel(err, {
            denied: DENIED,
            title: stale ? `The account changed since this page read it (version ${account.version}). Nothing was changed.` : 'Not changed.',
            refresh: stale || err.unknownOutcome ? () => { notice = null; load(); } : undefined,
          }));
        }
      };
      const confirmThen = async (opts, what, path, extra) => {
        if (await confirmDialog(opts)) await send(what, path, extra);
      };

      const controls = [];
      if (account.disabled) {
        controls.push(h('button', { type: 'button', class: 'button', on: { click: () => send('The account is enabled.', api.paths.accountAction(userId, 'enable')) } }, 'Enable'));
      } else {
        controls.push(h('button', {
          type: 'button', class: 'button danger',
          on: {
            click: () => confirmThen({ title: 'Disable account', message: ['All access ends at once: every session of the account ends, CLI sessions too, and it cannot sign in until it is enabled again.'], confirmLabel: 'Disable account', danger: true },
              'The account is disabled.', api.paths.accountAction(userId, 'disable')),
          },
        }, 'Disable'));
      }
      controls.push(h('button', {
        type: 'button', class: 'button secondary',
        on: {
          click: () => confirmThen({ title: 'Revoke sessions', message: ['Every session of the account ends; a fresh sign-in still works.'], confirmLabel: 'Revoke sessions', danger: true },
            'Every session of the account ended.', api.paths.accountAction(userId, 'revoke')),
        },
      }, 'Revoke sessions'));
      controls.push(h('button', {
        type: 'button', class: 'button secondary',
        on: {
          click: () => send((d) => (d.created ? 'The account is enrolled.' : 'Already enrolled: OCC enrols every account when it is created.'),
            api.paths.accountAction(userId, 'enrol'), {}, { versioned: false }),
        },
      }, 'Enrol'));

      const methods = dataTable({
        caption: 'Sign-in methods', rows: account.methods, rowKey: (m) => m.methodId,
        empty: 'No sign-in method.',
        columns: [
          { label: 'Method', cell: (m) => methodName(m.providerId) },
          { label: 'Subject', cell: (m) => h('code', {}, m.subject) },
          { label: 'Provider instance', cell: (m) => h('code', { class: 'id', title: m.providerId }, instanceText(m.providerId)) },
          {
            label: 'Actions', className: 'actions',
            cell: (m) => (m.providerId === 'credential' ? h('span', { class: 'hint' }, 'Kept') : h('button', {
              type: 'button', class: 'button secondary small', 'aria-label': `Detach ${methodName(m.providerId)} identity ${m.subject}`,
              on: {
                click: () => confirmThen({ title: 'Detach identity', message: [`${methodName(m.providerId)} sign-in with ${m.subject} ends, with every session of the account.`], confirmLabel: 'Detach identity', danger: true },
                  'The identity is detached.', api.paths.detachMethod(userId, m.methodId)),
              },
            }, 'Detach')),
          },
        ],
      });

      const configured = ['github', 'google', 'oidc'].filter((p) => providers[p]);
      let attach = null;
      if (configured.length) {
        const provider = field({ label: 'Provider', name: 'provider', kind: 'select', options: configured.map((p) => ({ value: p, label: PROVIDER_TITLES[p] })) });
        const subject = field({ label: 'Subject', name: 'subject', path: '/subject', required: true, autocomplete: 'off',
          hint: 'GitHub: the numeric user id. Google and OIDC: the ID token\'s sub claim. Never an email address.' });
        const form = h('form', { class: 'form', novalidate: true }, provider.row, subject.row,
          h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'button' }, 'Attach identity')));
        form.addEventListener('submit', (event) => {
          event.preventDefault();
          send(`The ${PROVIDER_TITLES[provider.control.value]} identity is attached.`, api.paths.attachIdentity(userId, provider.control.value), { subject: subject.control.value.trim() });
        });
        attach = h('section', { class: 'card', 'aria-labelledby': 'attach-identity' }, h('h2', { id: 'attach-identity' }, 'Attach an identity'),
          h('p', { class: 'hint' }, 'The person then signs in with it. Attaching ends the account\'s sessions.'), form);
      }

      replace(body,
        notice ? h('div', { class: 'alert success', role: 'status' }, h('p', { class: 'alert-lead account-notice' }, notice)) : null,
        definitionList([
          ['Account', h('code', { class: 'account-id' }, account.userId)],
          ['Principal', h('a', { href: router.href('/console/access', { subject: account.principalId }) }, h('code', {}, account.principalId))],
          ['Status', account.disabled ? badge('failed', 'disabled') : badge('active', 'enabled')],
          ['Version', h('span', { class: 'account-version' }, String(account.version))],
        ]),
        h('section', { class: 'card', 'aria-labelledby': 'account-controls' }, h('h2', { id: 'account-controls' }, 'Access'),
          failure, h('div', { class: 'form-actions' }, controls)),
        h('section', { 'aria-labelledby': 'account-methods' }, h('h2', { id: 'account-methods' }, 'Sign-in methods'), methods),
        attach);
    }
    load();
  },
};
