// The steps of an external sign-in that span a page load: the tab that starts it keeps the
// provider, the public attemptId and the page to return to in sessionStorage (per tab, never a
// credential), and the console page the provider's callback lands on finishes it.

const PENDING = 'occ.externalSignIn';
const HOME = '/console/agents';

export const PROVIDER_TITLES = { github: 'GitHub', google: 'Google', oidc: 'OIDC' };

// safeNext keeps only console paths, so ?next= cannot send anyone elsewhere.
export function safeNext(raw) {
  if (!raw || !raw.startsWith('/console/') || raw.startsWith('//') || raw.startsWith('/console/login')) return HOME;
  return raw;
}

export function savePending(pending) {
  try { window.sessionStorage.setItem(PENDING, JSON.stringify(pending)); } catch { /* storage refused: the result step is skipped */ }
}

// takePending returns the tab's pending sign-in once (and forgets it), or null.
export function takePending() {
  let raw = null;
  try {
    raw = window.sessionStorage.getItem(PENDING);
    window.sessionStorage.removeItem(PENDING);
  } catch { return null; }
  if (!raw) return null;
  try {
    const p = JSON.parse(raw);
    if (p && typeof p.provider === 'string' && typeof p.attemptId === 'string') return { provider: p.provider, attemptId: p.attemptId, next: safeNext(p.next) };
  } catch { /* a malformed entry is dropped */ }
  return null;
}

// refusal explains the callback's ?authError=<provider>&authReason=<reason>: the code to quote and
// a sentence. The API says why only where the person may know it; otherwise the identity is not
// attached to an account, or the provider could not complete the sign-in.
export function refusal(provider, reason) {
  const title = PROVIDER_TITLES[provider] || 'the provider';
  switch (reason) {
    case 'account-disabled':
      return { code: 'ACCOUNT_DISABLED', lead: 'Your account is disabled. Ask an Installation administrator to enable it.' };
    case 'membership':
      return { code: 'MEMBERSHIP_REQUIRED', lead: `Your ${title} account is not an active member of an organization or team this Installation allows.` };
    case 'membership-unavailable':
      return { code: 'MEMBERSHIP_UNAVAILABLE', lead: `${title} could not confirm your membership right now. Try again in a moment.` };
    default:
      return {
        code: 'EXTERNAL_SIGN_IN_REFUSED',
        lead: `Sign-in with ${title} was refused: this identity is not attached to an OCC account, or ${title} could not complete the sign-in.`,
        message: 'There is no sign-up: an Installation administrator attaches your identity to your account first.',
      };
  }
}
