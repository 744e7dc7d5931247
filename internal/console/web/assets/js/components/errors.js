// How failures are shown: a sentence a person can act on, the API's own message as plain text,
// and the code and request id to quote when reporting it. Nothing from the API is rendered as
// markup. A write whose outcome is unknown says so and offers Refresh, never a retry.

import { h } from '../dom.js';

const EXPLANATIONS = {
  401: 'Your session has ended. Sign in again.',
  403: 'You do not have permission for this.',
  404: 'It does not exist, or you cannot see it.',
  409: 'The current state does not allow this.',
  429: 'Too many attempts. Wait a moment before trying again.',
  400: 'The request was not accepted.',
};

// explain is the first sentence of a failure: the caller's context (what) for a denial, else a
// sentence by status.
export function explain(err, { denied } = {}) {
  if (err.unknownOutcome) return 'The outcome is unknown: the change may or may not have been made.';
  if (err.code === 'NETWORK_ERROR') return 'The API could not be reached.';
  if (err.status === 403 && denied) return denied;
  if (err.status >= 500) return 'The service is unavailable right now.';
  return EXPLANATIONS[err.status] || 'The request failed.';
}

// errorPanel renders a failure. Options: denied (the sentence for a 403), refresh (a function:
// shown as Refresh, the only action offered after an unknown outcome), retry (for reads only),
// details (the validation details not already shown next to their fields).
export function errorPanel(err, { denied, refresh, retry, title, details: shown } = {}) {
  const actions = [];
  if (err.unknownOutcome) {
    if (refresh) actions.push(h('button', { type: 'button', class: 'button', on: { click: refresh } }, 'Refresh'));
  } else {
    if (retry) actions.push(h('button', { type: 'button', class: 'button secondary', on: { click: retry } }, 'Try again'));
    if (refresh) actions.push(h('button', { type: 'button', class: 'button secondary', on: { click: refresh } }, 'Refresh'));
  }
  const details = (shown || err.details || []).map(detailItem);
  return h('div', { class: err.unknownOutcome ? 'alert warning' : 'alert error', role: 'alert' },
    title ? h('p', { class: 'alert-title' }, title) : null,
    h('p', { class: 'alert-lead' }, explain(err, { denied })),
    err.unknownOutcome ? h('p', {}, 'Refresh to read the current state before trying again; nothing is repeated automatically.') : null,
    err.message ? h('p', { class: 'alert-message' }, err.message) : null,
    details.length ? h('ul', { class: 'alert-details' }, details) : null,
    h('p', { class: 'alert-meta' },
      'Code ', h('code', { class: 'error-code' }, err.code || 'UNKNOWN'),
      err.requestId ? [' · Request ', h('code', { class: 'request-id' }, err.requestId)] : null),
    actions.length ? h('div', { class: 'alert-actions' }, actions) : null);
}

// detailItem is one detail: where and what for a validation problem; for an explained denial
// (PERMISSION_DENIED), which principal lacks which action on which resource, so the reader knows
// the grant to ask for.
function detailItem(d) {
  const p = d.permission;
  if (d.code === 'PERMISSION_DENIED' && p) {
    const who = p.principal.kind === 'service_principal' ? 'ServicePrincipal' : 'Principal';
    return h('li', { class: 'denied-permission' }, who, ' ', h('code', {}, p.principal.id), ' lacks ',
      h('code', {}, p.action), ' on ', p.resource.kind, ' ', h('code', {}, p.resource.id));
  }
  return h('li', {}, h('code', {}, d.path || '/'), ' ', d.code);
}

// isAbort reports a request cancelled because its page went away.
export function isAbort(err) { return err && err.name === 'AbortError'; }

// codedAlert shows a refusal the console knows by its code alone (no API answer to quote): the
// sentence, an optional second one, and the code.
export function codedAlert({ code, lead, message }) {
  return h('div', { class: 'alert error', role: 'alert' },
    h('p', { class: 'alert-lead' }, lead),
    message ? h('p', { class: 'alert-message' }, message) : null,
    h('p', { class: 'alert-meta' }, 'Code ', h('code', { class: 'error-code' }, code)));
}
