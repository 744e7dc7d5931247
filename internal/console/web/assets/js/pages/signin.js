// Sign in with email and password. After success the console returns to the page the person
// was on (?next=). External sign-in providers will be listed in the region below the form.

import * as api from '../api.js';
import { h, replace } from '../dom.js';
import * as router from '../router.js';
import { errorPanel } from '../components/errors.js';
import { field } from '../components/form.js';

// safeNext keeps only console paths, so ?next= cannot send anyone elsewhere.
function safeNext(raw) {
  if (!raw || !raw.startsWith('/console/') || raw.startsWith('//') || raw.startsWith('/console/login')) return '/console/agents';
  return raw;
}

export default {
  title: 'Sign in',
  render(ctx) {
    const email = field({ label: 'Email', name: 'email', type: 'email', autocomplete: 'username', required: true });
    const password = field({ label: 'Password', name: 'password', type: 'password', autocomplete: 'current-password', required: true });
    const failure = h('div', { class: 'form-failure' });
    const submit = h('button', { type: 'submit', class: 'button wide' }, 'Sign in');
    const form = h('form', { class: 'form', novalidate: true, 'aria-describedby': 'sign-in-note' },
      email.row, password.row, failure, submit);
    const page = h('main', { id: 'main', class: 'center-page', tabindex: '-1' },
      h('div', { class: 'card sign-in' },
        h('p', { class: 'brand' }, h('span', { class: 'brand-mark', 'aria-hidden': 'true' }), 'OCC console'),
        h('h1', {}, 'Sign in'),
        h('p', { id: 'sign-in-note', class: 'hint' }, 'Use the account an administrator created for you. There is no public sign-up.'),
        form,
        // External sign-in providers (OIDC, Google, GitHub) are listed here once configured.
        h('section', { id: 'external-sign-in', class: 'external-sign-in', 'aria-label': 'Other ways to sign in', hidden: true })));
    replace(ctx.main, page);
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      replace(failure);
      submit.disabled = true;
      submit.textContent = 'Signing in…';
      try {
        await api.request('POST', api.paths.signIn, { body: { email: email.control.value, password: password.control.value }, quiet401: true });
        password.control.value = '';
        const session = await api.get(api.paths.session, { quiet401: true });
        if (!session) throw new api.ApiError({ status: 401, code: 'UNAUTHENTICATED', message: 'The session was not established.' });
        await ctx.signedIn(session);
        router.navigate(safeNext(router.query().get('next')), { replace: true });
      } catch (err) {
        submit.disabled = false;
        submit.textContent = 'Sign in';
        const text = err.status === 401 ? 'The email or password is incorrect.' : undefined;
        replace(failure, text ? h('div', { class: 'alert error', role: 'alert' }, h('p', { class: 'alert-lead' }, text),
          h('p', { class: 'alert-meta' }, 'Code ', h('code', { class: 'error-code' }, err.code), err.requestId ? [' · Request ', h('code', { class: 'request-id' }, err.requestId)] : null))
          : errorPanel(err));
        password.control.focus();
      }
    });
    email.control.focus();
  },
};
