// The application shell: the session, the readable Namespaces and the selected one, the header,
// the navigation, and the lifecycle of the page on screen (its AbortSignal and cleanups). A page
// module exports {title, namespaced, render(ctx)}; ctx carries what the page may use.

import * as api from './api.js';
import { h, replace, announce } from './dom.js';
import * as router from './router.js';
import { closeAllDialogs } from './components/dialog.js';
import { errorPanel } from './components/errors.js';
import { takePending } from './components/signinflow.js';

const SIGN_IN = '/console/login';
const HOME = '/console/agents';

const NAV = [
  { path: '/console/agents', label: 'Agents', match: /^\/console\/agents/ },
  { path: '/console/secrets', label: 'Secrets', match: /^\/console\/secrets/ },
  { path: '/console/access', label: 'Access', match: /^\/console\/access/ },
  { path: '/console/namespaces', label: 'Namespaces', match: /^\/console\/namespaces/ },
  { path: '/console/audit', label: 'Audit', match: /^\/console\/audit/ },
  { path: '/console/people', label: 'People', match: /^\/console\/(people|recovery)/ },
  { path: '/console/cli-sessions', label: 'CLI sessions', match: /^\/console\/cli-/ },
];

const state = {
  session: undefined, // undefined: not read yet; null: signed out
  namespaces: null,
  namespacesError: null,
  page: null, // {controller, cleanups}
  shell: null,
  signInPage: null,
  notFoundPage: null,
};

function app() { return document.getElementById('app'); }

function version() {
  const meta = document.querySelector('meta[name="occ-version"]');
  return meta ? meta.content : 'dev';
}

// endPage stops everything the page on screen started.
function endPage() {
  if (!state.page) return;
  state.page.controller.abort();
  for (const fn of state.page.cleanups) {
    try { fn(); } catch { /* a cleanup must not stop the others */ }
  }
  state.page = null;
}

// clearPrivate forgets every private view at once: used on sign-out and on an ended session.
function clearPrivate() {
  endPage();
  closeAllDialogs();
  state.session = null;
  state.namespaces = null;
  state.shell = null;
  api.setSessionKey('');
}

function currentLocation() { return window.location.pathname + window.location.search; }

function toSignIn({ keepPlace }) {
  // Parallel reads can all answer 401: the first one decides where to return to.
  if (window.location.pathname.startsWith(SIGN_IN)) { clearPrivate(); return; }
  const next = keepPlace && !window.location.pathname.startsWith(SIGN_IN) ? currentLocation() : null;
  clearPrivate();
  router.navigate(next ? `${SIGN_IN}?next=${encodeURIComponent(next)}` : SIGN_IN, { replace: true });
}

export async function loadNamespaces() {
  try {
    state.namespaces = await api.list(api.paths.namespaces);
    state.namespacesError = null;
  } catch (err) {
    if (err.status === 401) throw err;
    state.namespaces = [];
    state.namespacesError = err;
  }
  return state.namespaces;
}

// selectedNamespace resolves ?namespace= against the readable Namespaces: {id, namespace,
// unavailable}. Without the parameter the first readable Namespace ("default" first) is chosen.
function selectedNamespace() {
  const id = router.query().get('namespace');
  const list = state.namespaces || [];
  if (id) {
    const found = list.find((n) => n.id === id);
    return { id, namespace: found || null, unavailable: !found };
  }
  const pick = list.find((n) => n.name === 'default') || list[0];
  return { id: pick ? pick.id : '', namespace: pick || null, unavailable: false };
}

function signOut() {
  // Private content goes first, before the API answers.
  const email = state.session && state.session.user ? state.session.user.email : '';
  clearPrivate();
  const view = h('main', { class: 'center-page', id: 'main', tabindex: '-1' }, h('p', { role: 'status' }, 'Signing out…'));
  replace(app(), view);
  const attempt = async () => {
    try {
      await api.request('POST', api.paths.signOut, { body: {}, quiet401: true });
    } catch (err) {
      if (err.status !== 401) {
        replace(view, h('h1', {}, 'Sign-out not confirmed'),
          h('p', {}, `The session of ${email || 'this account'} may still be valid on the server. The console shows nothing private until you sign in again.`),
          errorPanel(err, { retry: attempt }));
        view.querySelector('button') && view.querySelector('button').focus();
        return;
      }
    }
    router.navigate(SIGN_IN, { replace: true });
    announce('Signed out.');
  };
  attempt();
}

function buildShell() {
  const nsSelect = h('select', { id: 'namespace-select', class: 'namespace-select' });
  const nsField = h('div', { class: 'namespace-field' }, h('label', { for: 'namespace-select' }, 'Namespace'), nsSelect);
  const toggle = h('button', { type: 'button', class: 'menu-toggle', 'aria-expanded': 'false', 'aria-controls': 'sidebar' }, 'Menu');
  const links = NAV.map((item) => ({ item, a: h('a', { href: item.path }, item.label) }));
  const build = h('p', { class: 'build', hidden: true });
  const account = h('p', { class: 'account-email' });
  const signOutButton = h('button', { type: 'button', class: 'button secondary small', on: { click: signOut } }, 'Sign out');
  const sidebar = h('nav', { id: 'sidebar', class: 'sidebar', 'aria-label': 'Main' },
    h('ul', { class: 'nav-list' }, links.map((l) => h('li', {}, l.a))),
    h('div', { class: 'account' }, h('p', { class: 'account-label' }, 'Signed in as'), account, signOutButton),
    build);
  const main = h('main', { id: 'main', class: 'main', tabindex: '-1' });
  const header = h('header', { class: 'topbar' },
    toggle, h('a', { class: 'brand', href: HOME }, h('span', { class: 'brand-mark', 'aria-hidden': 'true' }), 'OCC console'), nsField);
  const root = h('div', { class: 'layout' },
    h('a', { class: 'skip-link', href: '#main', on: { click: (e) => { e.preventDefault(); main.focus(); } } }, 'Skip to content'),
    header, sidebar, main);
  toggle.addEventListener('click', () => {
    const open = toggle.getAttribute('aria-expanded') !== 'true';
    toggle.setAttribute('aria-expanded', String(open));
    sidebar.classList.toggle('open', open);
  });
  sidebar.addEventListener('click', (e) => {
    if (e.target instanceof HTMLAnchorElement) { toggle.setAttribute('aria-expanded', 'false'); sidebar.classList.remove('open'); }
  });
  nsSelect.addEventListener('change', () => {
    const id = nsSelect.value;
    const path = window.location.pathname;
    // Switching from an Agent's page goes to the Agents list of the new Namespace.
    if (/^\/console\/agents\/.+/.test(path)) router.navigate(router.href(HOME, { namespace: id }));
    else router.navigate(router.href(path, { ...Object.fromEntries(router.query()), namespace: id }));
  });
  return { root, main, nsSelect, nsField, links, build, account };
}

function updateShell(page) {
  const s = state.shell;
  const sel = selectedNamespace();
  const options = (state.namespaces || []).map((n) => h('option', { value: n.id, selected: n.id === sel.id }, n.name));
  if (sel.unavailable) options.unshift(h('option', { value: sel.id, selected: true }, 'Namespace unavailable'));
  if (!options.length) options.push(h('option', { value: '' }, 'No readable Namespace'));
  replace(s.nsSelect, options);
  s.nsField.hidden = !page || !page.namespaced;
  for (const { item, a } of s.links) {
    a.href = router.href(item.path);
    if (item.match.test(window.location.pathname)) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  s.account.textContent = state.session.user.email;
  const debug = router.query().get('debug') === 'true';
  s.build.hidden = !debug;
  s.build.textContent = debug ? `Build ${version()}` : '';
}

function namespaceProblem(sel) {
  if (sel.unavailable) {
    return h('div', { class: 'alert warning', role: 'alert' },
      h('h1', { tabindex: '-1' }, 'Namespace unavailable'),
      h('p', {}, 'The Namespace in the address does not exist, or your account cannot read it (namespace:read). Choose another Namespace in the header.'),
      h('p', { class: 'alert-meta' }, 'Namespace ', h('code', {}, sel.id)));
  }
  if (state.namespacesError) return errorPanel(state.namespacesError, { denied: 'You cannot list Namespaces.', retry: () => { loadNamespaces().then(render); } });
  return h('div', { class: 'alert info', role: 'status' },
    h('h1', { tabindex: '-1' }, 'No Namespace yet'),
    h('p', {}, 'Your account cannot read any Namespace. Ask an administrator for access, or create one on the Namespaces page if you may.'));
}

let pages = {};
export function registerPages(p) { pages = p; }

// completeExternalSignIn finishes a provider sign-in in the tab that started it: the callback
// set the session cookie and a login receipt; the result step trades the receipt for the key.
async function completeExternalSignIn(pending) {
  endPage();
  state.shell = null;
  const view = h('main', { class: 'center-page', id: 'main', tabindex: '-1' }, h('p', { role: 'status' }, 'Completing the sign-in…'));
  replace(app(), view);
  try {
    const session = await api.get(api.paths.session, { quiet401: true });
    if (!session) {
      // No callback signed this browser in (a refused one carries authError): an abandoned start.
      router.navigate(SIGN_IN, { replace: true });
      return;
    }
    const { data } = await api.post(api.paths.providerResult(pending.provider), { attemptId: pending.attemptId }, { quiet401: true });
    state.session = { ...session, sessionKey: data.sessionKey };
    api.setSessionKey(data.sessionKey);
    state.namespaces = null;
    router.navigate(pending.next, { replace: true });
  } catch (err) {
    replace(view, h('h1', {}, 'Sign-in not completed'),
      errorPanel(err, { retry: () => router.navigate(SIGN_IN, { replace: true }) }));
  }
}

async function render() {
  const path = window.location.pathname;
  if (path === '/console/' || path === '/console') {
    // A provider's callback lands here: refused, or signed in with a sign-in to finish.
    const q = router.query();
    const pending = takePending();
    if (q.get('authError')) {
      router.navigate(router.href(SIGN_IN, { authError: q.get('authError'), authReason: q.get('authReason') }), { replace: true });
      return;
    }
    if (pending) {
      await completeExternalSignIn(pending);
      return;
    }
    router.navigate(router.href(HOME, Object.fromEntries(router.query())), { replace: true });
    return;
  }
  const { page, params } = router.match(path);
  endPage();
  if (page === pages.signIn) {
    state.shell = null;
    renderPage(page, params, app(), null);
    return;
  }
  if (state.session === undefined || state.session === null) {
    try {
      const session = await api.get(api.paths.session, { quiet401: true });
      state.session = session;
    } catch (err) {
      replace(app(), h('main', { class: 'center-page', id: 'main' }, h('h1', {}, 'OCC console'), errorPanel(err, { retry: render })));
      return;
    }
    if (!state.session) {
      toSignIn({ keepPlace: true });
      return;
    }
    api.setSessionKey(state.session.sessionKey);
  }
  if (state.namespaces === null) {
    try { await loadNamespaces(); } catch { return; /* 401: the handler moved to sign-in */ }
  }
  if (!state.shell) {
    state.shell = buildShell();
    replace(app(), state.shell.root);
  }
  const target = page || pages.notFound;
  const sel = selectedNamespace();
  if (target.namespaced && !router.query().get('namespace') && sel.id) {
    router.navigate(router.href(path, { ...Object.fromEntries(router.query()), namespace: sel.id }), { replace: true });
    return;
  }
  updateShell(target);
  renderPage(target, params, state.shell.main, sel);
}

function renderPage(page, params, container, sel) {
  const controller = new AbortController();
  state.page = { controller, cleanups: [] };
  const pageState = state.page;
  replace(container);
  document.title = `${page.title} · OCC console`;
  const ctx = {
    main: container,
    params,
    query: router.query(),
    signal: controller.signal,
    session: state.session,
    namespaceId: sel ? sel.id : '',
    namespace: sel ? sel.namespace : null,
    namespaces: state.namespaces || [],
    onCleanup: (fn) => pageState.cleanups.push(fn),
    refreshNamespaces: async () => { await loadNamespaces(); if (state.shell) updateShell(page); return state.namespaces; },
    signedIn: async (session) => { state.session = session; api.setSessionKey(session.sessionKey); state.namespaces = null; },
    rerender: render,
  };
  if (page.namespaced && (!sel || !sel.namespace)) {
    container.append(namespaceProblem(sel || {}));
  } else {
    page.render(ctx);
  }
  // Move focus to the page's heading so keyboard and screen-reader users start at the content.
  const heading = container.querySelector('h1');
  if (heading) {
    heading.setAttribute('tabindex', '-1');
    if (!container.contains(document.activeElement) || document.activeElement === document.body) heading.focus({ preventScroll: true });
  }
}

export function start() {
  document.body.append(h('div', { id: 'announcer', class: 'visually-hidden', 'aria-live': 'polite', role: 'status' }));
  api.onUnauthenticated(() => {
    if (state.session) announce('Your session has ended. Sign in again.');
    toSignIn({ keepPlace: true });
  });
  router.start(render);
}
