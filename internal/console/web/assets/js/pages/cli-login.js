// The approval page of `occ login` (the verificationUri the API answers): the person types the
// code the CLI printed, sees which CLI asks, from where and until when, and approves or denies.
// It needs a signed-in browser session; the shell sends a signed-out person to sign-in and back.

import * as api from '../api.js';
import { h, replace, announce, formatTime } from '../dom.js';
import * as router from '../router.js';
import { errorPanel } from '../components/errors.js';
import { field } from '../components/form.js';
import { definitionList } from '../components/table.js';

export default {
  title: 'Approve occ login',
  namespaced: false,
  render(ctx) {
    const code = field({ label: 'Code', name: 'userCode', value: ctx.query.get('code') || '', required: true, autocomplete: 'off',
      hint: 'The eight letters occ login printed, such as BCDF-GHJK.', attrs: { autocapitalize: 'characters', spellcheck: 'false' } });
    const failure = h('div');
    const request = h('div', { 'aria-live': 'polite' });
    const lookUp = h('button', { type: 'submit', class: 'button' }, 'Continue');
    const form = h('form', { class: 'form', novalidate: true }, code.row, failure, h('div', { class: 'form-actions' }, lookUp));
    replace(ctx.main, h('h1', {}, 'Approve occ login'),
      h('p', { class: 'lead' }, `Signed in as ${ctx.session.user.email}. Approve only a code you just started yourself with occ login: the CLI will act as you, with your permissions.`),
      h('section', { class: 'card', 'aria-labelledby': 'cli-code' }, h('h2', { id: 'cli-code' }, 'Enter the code'), form),
      request);

    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      replace(failure);
      replace(request);
      lookUp.disabled = true;
      const userCode = code.control.value.trim();
      try {
        const { data } = await api.post(api.paths.cliLookup, { userCode }, { signal: ctx.signal });
        lookUp.disabled = false;
        showRequest(ctx, request, userCode, data, () => { form.hidden = true; });
      } catch (err) {
        lookUp.disabled = false;
        if (err.name === 'AbortError') return;
        replace(failure, errorPanel(err, { title: 'The code was not accepted.' }));
        code.control.focus();
      }
    });
    code.control.focus();
  },
};

function showRequest(ctx, region, userCode, req, onDecided) {
  const outcome = h('div');
  const approve = h('button', { type: 'button', class: 'button' }, 'Approve');
  const deny = h('button', { type: 'button', class: 'button danger' }, 'Deny');
  const actions = h('div', { class: 'form-actions' }, approve, deny);
  const where = req.sameAddress
    ? `${req.requesterAddress} (the same address as this browser)`
    : h('span', {}, req.requesterAddress, ' ', h('strong', { class: 'address-warning' }, 'A different address than this browser: approve only if you started it there.'));
  replace(region, h('section', { class: 'card cli-request', 'aria-labelledby': 'cli-request-title' },
    h('h2', { id: 'cli-request-title' }, 'Sign-in request'),
    definitionList([
      ['Client', h('span', { class: 'client-label' }, req.clientLabel)],
      ['Requested from', where],
      ['Namespace', req.namespaceId ? h('code', {}, req.namespaceId) : 'Every Namespace you can access'],
      ['Code expires', formatTime(req.codeExpiresAt)],
      ['The CLI session would end', formatTime(req.sessionExpiresAt)],
      ['Signed in as', ctx.session.user.email],
    ]),
    outcome, actions));
  approve.focus();
  const decide = async (decision) => {
    approve.disabled = true;
    deny.disabled = true;
    replace(outcome);
    try {
      const { data } = await api.post(api.paths.cliDecide, { userCode, decision });
      actions.remove();
      onDecided();
      const text = data.decision === 'approve'
        ? `Approved. ${req.clientLabel} is signed in as ${ctx.session.user.email} until ${formatTime(data.sessionExpiresAt || req.sessionExpiresAt)}. You can close this page.`
        : `Denied. ${req.clientLabel} is told the request was refused.`;
      announce(text);
      replace(outcome, h('div', { class: data.decision === 'approve' ? 'alert success' : 'alert info', role: 'status' },
        h('p', { class: 'alert-lead cli-decision' }, text),
        h('p', {}, h('a', { href: router.href('/console/cli-sessions') }, 'Your CLI sessions'))));
    } catch (err) {
      approve.disabled = false;
      deny.disabled = false;
      replace(outcome, errorPanel(err, { title: decision === 'approve' ? 'Not approved.' : 'Not denied.' }));
    }
  };
  approve.addEventListener('click', () => decide('approve'));
  deny.addEventListener('click', () => decide('deny'));
}
