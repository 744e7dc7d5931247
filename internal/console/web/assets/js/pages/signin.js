// Sign in: a button per configured provider (GET /api/auth/providers) and the password form,
// which is the ordinary way in when the API allows passwords for everyone and the recovery
// account's way in when it allows them only for that account. After success the console returns
// to the page the person was on (?next=).

import * as api from '../api.js';
import { h, replace } from '../dom.js';
import * as router from '../router.js';
import { errorPanel, codedAlert } from '../components/errors.js';
import { field } from '../components/form.js';
import { PROVIDER_TITLES, refusal, safeNext, savePending, takePending } from '../components/signinflow.js';

const ORDER = ['oidc', 'google', 'github'];

function providerLabel(name, providers) {
  if (name === 'oidc') return `Sign in with ${(providers.oidcSignIn && providers.oidcSignIn.label) || 'single sign-on'}`;
  return `Sign in with ${PROVIDER_TITLES[name]}`;
}

export default {
  title: 'Sign in',
  render(ctx) {
    const next = safeNext(router.query().get('next'));
    // A sign-in started earlier in this tab and abandoned (Back from the provider) is forgotten.
    takePending();
    const failure = h('div', { class: 'form-failure' });
    const providerRegion = h('section', { id: 'external-sign-in', class: 'external-sign-in', 'aria-label': 'Sign in with your organization', hidden: true });
    const passwordRegion = h('div', { class: 'password-sign-in', 'aria-busy': 'true' }, h('p', { class: 'loading' }, 'Loading the sign-in methods…'));
    const note = h('p', { id: 'sign-in-note', class: 'hint' }, 'Use the account an administrator created for you. There is no public sign-up.');
    const page = h('main', { id: 'main', class: 'center-page', tabindex: '-1' },
      h('div', { class: 'card sign-in' },
        h('p', { class: 'brand' }, h('span', { class: 'brand-mark', 'aria-hidden': 'true' }), 'OCC console'),
        h('h1', {}, 'Sign in'),
        note, failure, providerRegion, passwordRegion));
    replace(ctx.main, page);

    const authError = router.query().get('authError');
    if (authError) replace(failure, codedAlert(refusal(authError, router.query().get('authReason'))));

    const showPassword = ({ recoveryOnly }) => {
      const form = passwordForm(ctx, next, failure, recoveryOnly);
      if (recoveryOnly) {
        replace(passwordRegion, h('details', { class: 'recovery-sign-in' },
          h('summary', {}, 'Sign in with the recovery account'),
          h('p', { class: 'hint' }, 'Passwords are kept for the recovery account, for when every provider is unavailable.'),
          form.form));
      } else {
        replace(passwordRegion, form.form);
      }
      passwordRegion.setAttribute('aria-busy', 'false');
      return form;
    };

    api.get(api.paths.providers, { quiet401: true, signal: ctx.signal }).then((providers) => {
      const names = ORDER.filter((n) => providers[n]);
      if (names.length) {
        const buttons = names.map((n) => h('button', { type: 'button', class: 'button wide provider', dataset: { provider: n } }, providerLabel(n, providers)));
        for (const b of buttons) b.addEventListener('click', () => startExternal(b.dataset.provider, buttons, failure, next));
        replace(providerRegion, buttons);
        providerRegion.hidden = false;
        note.textContent = 'Sign in with your organization, or with the account an administrator created for you. There is no public sign-up.';
      }
      const form = showPassword({ recoveryOnly: !providers.password });
      if (providers.password) form.email.control.focus();
      else if (names.length) providerRegion.querySelector('button').focus();
    }).catch((err) => {
      if (err && err.name === 'AbortError') return;
      // Without the list the password form is still offered: the API decides whether it works.
      replace(failure, errorPanel(err, { title: 'The sign-in methods could not be read.' }));
      showPassword({ recoveryOnly: false }).email.control.focus();
    });
  },
};

// startExternal asks the API for the provider URL (the attempt is bound to this browser by a
// cookie), remembers the attempt in this tab and leaves for the provider.
async function startExternal(provider, buttons, failure, next) {
  replace(failure);
  for (const b of buttons) b.disabled = true;
  try {
    const { data } = await api.post(api.paths.providerStart(provider), {}, { quiet401: true });
    savePending({ provider, attemptId: data.attemptId, next });
    window.location.assign(data.url);
  } catch (err) {
    for (const b of buttons) b.disabled = false;
    replace(failure, errorPanel(err, { title: `Sign-in with ${PROVIDER_TITLES[provider]} could not start.` }));
  }
}

function passwordForm(ctx, next, failure, recoveryOnly) {
  const email = field({ label: 'Email', name: 'email', type: 'email', autocomplete: 'username', required: true });
  const password = field({ label: 'Password', name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const label = recoveryOnly ? 'Sign in with password' : 'Sign in';
  const submit = h('button', { type: 'submit', class: 'button wide' }, label);
  const form = h('form', { class: 'form', novalidate: true, 'aria-describedby': 'sign-in-note' }, email.row, password.row, submit);
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
      router.navigate(next, { replace: true });
    } catch (err) {
      submit.disabled = false;
      submit.textContent = label;
      if (err.status === 401) {
        replace(failure, codedAlert({ code: err.code, lead: recoveryOnly ? 'The email or password is incorrect, or this account may not use a password.' : 'The email or password is incorrect.' }));
        const meta = failure.querySelector('.alert-meta');
        if (meta && err.requestId) meta.append(' · Request ', h('code', { class: 'request-id' }, err.requestId));
      } else {
        replace(failure, errorPanel(err));
      }
      password.control.focus();
    }
  });
  return { form, email, password };
}
