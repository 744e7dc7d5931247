// A small history router: patterns like /console/agents/:agentId, a query kept in the URL, and
// two sticky parameters (namespace, debug) carried from page to page so a reload or Back shows
// the same view.

const STICKY = ['namespace', 'debug'];
const routes = [];
let renderHandler = () => {};

export function route(pattern, page) {
  const names = [];
  const source = pattern.replace(/:[A-Za-z]+/g, (m) => { names.push(m.slice(1)); return '([^/]+)'; });
  routes.push({ regex: new RegExp(`^${source}/?$`), names, page });
}

// match resolves a pathname to {page, params}; unknown paths give page null.
export function match(pathname) {
  for (const r of routes) {
    const m = r.regex.exec(pathname);
    if (m) {
      const params = {};
      r.names.forEach((n, i) => { params[n] = decodeURIComponent(m[i + 1]); });
      return { page: r.page, params };
    }
  }
  return { page: null, params: {} };
}

export function query() { return new URLSearchParams(window.location.search); }

// href builds a console URL with the sticky parameters of the current URL, then extra ones
// (a null value removes a parameter).
export function href(path, extra = {}) {
  const current = query();
  const params = new URLSearchParams();
  for (const key of STICKY) if (current.has(key)) params.set(key, current.get(key));
  for (const [k, v] of Object.entries(extra)) {
    if (v === null || v === undefined || v === '') params.delete(k); else params.set(k, String(v));
  }
  const s = params.toString();
  return s ? `${path}?${s}` : path;
}

export function navigate(url, { replace = false } = {}) {
  if (replace) window.history.replaceState(null, '', url); else window.history.pushState(null, '', url);
  renderHandler();
}

// setQuery changes query parameters of the current page without a new history entry when
// replace is set (filters typed into a search box), or with one (tabs).
export function setQuery(extra, { replace = true, render = false } = {}) {
  const url = href(window.location.pathname, { ...Object.fromEntries(query()), ...extra });
  if (replace) window.history.replaceState(null, '', url); else window.history.pushState(null, '', url);
  if (render) renderHandler();
}

export function start(onRender) {
  renderHandler = onRender;
  window.addEventListener('popstate', () => renderHandler());
  // Same-origin console links navigate in place; modified clicks keep the browser's behaviour.
  document.addEventListener('click', (event) => {
    const a = event.target instanceof Element ? event.target.closest('a[href]') : null;
    if (!a || a.target || a.hasAttribute('download')) return;
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const url = new URL(a.href, window.location.href);
    if (url.origin !== window.location.origin || !url.pathname.startsWith('/console/')) return;
    event.preventDefault();
    navigate(url.pathname + url.search);
  });
  renderHandler();
}
