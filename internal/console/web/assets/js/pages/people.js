// People (administrators): create a person's password account, so nobody needs a raw API call
// for it, and open an account's sign-in controls by its id (the API lists no accounts). The new
// account's Principal id is what Access bindings name.

import * as api from '../api.js';
import { h, replace, announce } from '../dom.js';
import * as router from '../router.js';
import { errorPanel } from '../components/errors.js';
import { field, showDetails } from '../components/form.js';
import { definitionList } from '../components/table.js';

export default {
  title: 'People',
  namespaced: false,
  render(ctx) {
    const email = field({ label: 'Email', name: 'email', type: 'email', path: '/email', required: true, autocomplete: 'off' });
    const name = field({ label: 'Display name', name: 'name', path: '/name', hint: 'Optional; the email is used without it.' });
    const password = field({ label: 'First password', name: 'password', type: 'password', path: '/password', required: true, autocomplete: 'new-password', hint: '12 to 128 characters. Hand it over privately.' });
    const failure = h('div');
    const result = h('div', { 'aria-live': 'polite' });
    const submit = h('button', { type: 'submit', class: 'button' }, 'Create account');
    const form = h('form', { class: 'form', novalidate: true }, email.row, name.row, password.row, failure, h('div', { class: 'form-actions' }, submit));
    const accountId = field({ label: 'Account id', name: 'accountId', required: true, autocomplete: 'off', hint: 'usr_…, shown when the account is created and in the audit log.' });
    const open = h('form', { class: 'form', novalidate: true }, accountId.row,
      h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'button secondary' }, 'Open account'),
        h('a', { class: 'button secondary', href: router.href('/console/recovery') }, 'Recovery account')));
    open.addEventListener('submit', (event) => {
      event.preventDefault();
      const id = accountId.control.value.trim();
      if (!id) { accountId.setError('Account id is required.'); return; }
      router.navigate(router.href(`/console/people/${encodeURIComponent(id)}`));
    });
    replace(ctx.main, h('h1', {}, 'People'),
      h('p', { class: 'lead' }, 'Create an account for a person. An account grants nothing by itself: give it access to a Namespace on the Access page.'),
      h('section', { class: 'card', 'aria-labelledby': 'create-account' }, h('h2', { id: 'create-account' }, 'Create an account'), form), result,
      h('section', { class: 'card', 'aria-labelledby': 'open-account' }, h('h2', { id: 'open-account' }, 'Sign-in and account controls'),
        h('p', { class: 'hint' }, 'Disable or enable an account, end its sessions, attach or detach a GitHub, Google or OIDC identity.'), open));
    let uncertain = false;
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      if (uncertain) return;
      replace(failure);
      submit.disabled = true;
      const body = { email: email.control.value, password: password.control.value };
      if (name.control.value.trim()) body.name = name.control.value;
      try {
        const { data } = await api.post(api.paths.accounts, body);
        password.control.value = '';
        email.control.value = '';
        name.control.value = '';
        submit.disabled = false;
        announce(`Account ${data.email} created.`);
        replace(result, h('section', { class: 'alert success', role: 'status' },
          h('p', { class: 'alert-lead' }, `Account ${data.email} created.`),
          definitionList([['Name', data.name], ['Account', h('code', {}, data.id)], ['Principal', h('code', { class: 'principal-id' }, data.principalId)]]),
          h('p', {}, h('a', { href: router.href('/console/access', { subject: data.principalId }) }, 'Grant this person access to the selected Namespace')),
          h('p', {}, h('a', { href: router.href(`/console/people/${data.id}`) }, 'Sign-in methods and account controls'))));
      } catch (err) {
        submit.disabled = false;
        if (err.unknownOutcome) { uncertain = true; submit.disabled = true; }
        const rest = showDetails([email, name, password], err.details);
        replace(failure, errorPanel(err, { details: rest, denied: 'Creating accounts needs installation:administer.', refresh: err.unknownOutcome ? () => ctx.rerender() : undefined }));
      }
    });
  },
};
