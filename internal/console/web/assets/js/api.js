// The API client: the only module that calls fetch. It speaks the API's envelope
// ({data, meta} / {error, meta}), sends the session key it was given (never stored), and turns
// every failure into an ApiError that pages show with its code and request id. It never retries:
// a write whose outcome is unknown is reported as such.

export class ApiError extends Error {
  constructor({ status = 0, code, message, details = [], requestId = '', unknownOutcome = false }) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
    this.requestId = requestId;
    // unknownOutcome: the write may or may not have happened (network failure, 503 UNKNOWN_OUTCOME).
    this.unknownOutcome = unknownOutcome;
  }
}

const listeners = { unauthenticated: [] };
let sessionKey = '';

export function setSessionKey(key) { sessionKey = key || ''; }

// onUnauthenticated registers a handler for any 401 from a protected route.
export function onUnauthenticated(handler) { listeners.unauthenticated.push(handler); }

function queryString(query) {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  }
  const s = params.toString();
  return s ? `?${s}` : '';
}

const SAFE = new Set(['GET', 'HEAD']);

// request performs one call. Options: body (JSON), query, signal, quiet401 (do not announce a
// 401: the sign-in page's own calls).
export async function request(method, path, { body, query, signal, quiet401 = false } = {}) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (sessionKey) headers['x-occ-session-key'] = sessionKey;
  let response;
  try {
    response = await fetch(path + queryString(query), {
      method, headers, signal, credentials: 'same-origin', cache: 'no-store',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    if (err && err.name === 'AbortError') throw err;
    throw new ApiError({
      code: 'NETWORK_ERROR',
      message: SAFE.has(method) ? 'The API could not be reached.' : 'The API could not be reached; the change may or may not have been made.',
      unknownOutcome: !SAFE.has(method),
    });
  }
  const requestId = response.headers.get('x-request-id') || '';
  if (response.status === 204) return { data: null, meta: { requestId } };
  let doc;
  try {
    doc = await response.json();
  } catch (err) {
    if (err && err.name === 'AbortError') throw err;
    throw new ApiError({
      status: response.status, code: 'INVALID_RESPONSE', requestId,
      message: 'The API answered with something that is not JSON.',
      unknownOutcome: !SAFE.has(method) && response.status >= 500,
    });
  }
  if (response.ok) return { data: doc.data, meta: doc.meta || { requestId } };
  const e = doc && doc.error ? doc.error : {};
  const error = new ApiError({
    status: response.status,
    code: e.code || 'HTTP_' + response.status,
    message: e.message || 'The request failed.',
    details: Array.isArray(e.details) ? e.details : [],
    requestId: (doc.meta && doc.meta.requestId) || requestId,
    unknownOutcome: e.code === 'UNKNOWN_OUTCOME',
  });
  if (response.status === 401 && !quiet401) {
    for (const handler of listeners.unauthenticated) handler(error);
  }
  throw error;
}

export const get = (path, options) => request('GET', path, options).then((r) => r.data);
export const post = (path, body, options) => request('POST', path, { ...options, body: body === undefined ? {} : body });
export const patch = (path, body, options) => request('PATCH', path, { ...options, body });
export const del = (path, options) => request('DELETE', path, options);

// list reads a complete list (the API returns complete lists without limit).
export const list = (path, options) => get(path, options).then((d) => d || []);

// Paths of the API's resources, in one place.
export const paths = {
  session: '/api/auth/session',
  signIn: '/api/auth/sign-in/email',
  signOut: '/api/auth/sign-out',
  accounts: '/api/auth/accounts',
  account: (id) => `/api/auth/accounts/${encodeURIComponent(id)}`,
  accountAction: (id, action) => `/api/auth/accounts/${encodeURIComponent(id)}/${action}`,
  attachIdentity: (id, provider) => `/api/auth/accounts/${encodeURIComponent(id)}/providers/${encodeURIComponent(provider)}`,
  detachMethod: (id, methodId) => `/api/auth/accounts/${encodeURIComponent(id)}/methods/${encodeURIComponent(methodId)}/detach`,
  recovery: '/api/auth/recovery',
  providers: '/api/auth/providers',
  providerStart: (p) => `/api/auth/providers/${encodeURIComponent(p)}/start`,
  providerResult: (p) => `/api/auth/providers/${encodeURIComponent(p)}/result`,
  cliLookup: '/api/auth/cli/device-authorizations/lookup',
  cliDecide: '/api/auth/cli/device-authorizations/decide',
  cliSessions: '/api/auth/cli-sessions',
  cliSession: (id) => `/api/auth/cli-sessions/${encodeURIComponent(id)}`,
  auditEvents: '/audit-events',
  namespaces: '/namespaces',
  namespace: (ns) => `/namespaces/${encodeURIComponent(ns)}`,
  agents: (ns) => `/namespaces/${encodeURIComponent(ns)}/agents`,
  agent: (ns, id) => `/namespaces/${encodeURIComponent(ns)}/agents/${encodeURIComponent(id)}`,
  latestDeployments: (ns) => `/namespaces/${encodeURIComponent(ns)}/latest-deployments`,
  revisions: (ns, id) => `${paths.agent(ns, id)}/revisions`,
  revision: (ns, id, rev) => `${paths.agent(ns, id)}/revisions/${encodeURIComponent(rev)}`,
  deployment: (ns, id, rev) => `${paths.agent(ns, id)}/deployments/${encodeURIComponent(rev)}`,
  configurations: (ns) => `/namespaces/${encodeURIComponent(ns)}/configurations`,
  configuration: (ns, id) => `/namespaces/${encodeURIComponent(ns)}/configurations/${encodeURIComponent(id)}`,
  secrets: (ns) => `/namespaces/${encodeURIComponent(ns)}/secrets`,
  secret: (ns, id) => `/namespaces/${encodeURIComponent(ns)}/secrets/${encodeURIComponent(id)}`,
  serviceAccounts: (ns) => `/namespaces/${encodeURIComponent(ns)}/service-accounts`,
  roles: (ns) => `/namespaces/${encodeURIComponent(ns)}/iam/roles`,
  role: (ns, id) => `/namespaces/${encodeURIComponent(ns)}/iam/roles/${encodeURIComponent(id)}`,
  bindings: (ns) => `/namespaces/${encodeURIComponent(ns)}/iam/access-bindings`,
  binding: (ns, id) => `/namespaces/${encodeURIComponent(ns)}/iam/access-bindings/${encodeURIComponent(id)}`,
  servicePrincipals: (ns) => `/namespaces/${encodeURIComponent(ns)}/iam/service-principals`,
};
