// Live deployment progress: the deployment status of one revision read every second while it is
// queued or running, each phase the worker reports added to a timeline, the elapsed time, and
// the final result — on failure its code, its fixed message and what to check.

import * as api from '../api.js';
import { h, replace, announce, formatTime } from '../dom.js';
import { badge } from '../components/status.js';
import { errorPanel, isAbort } from '../components/errors.js';

// What to check after a failed deployment, by its code.
const CHECKS = {
  RUNTIME_AUTHENTICATION_FAILED: 'Check the Harness authentication Secret: its value must be a credential the model provider accepts. Replace it on the Secrets page, then deploy again.',
  RUNTIME_LOGIN_FAILED: 'Check the Harness authentication Secret and that the runtime can reach the model provider.',
  RUNTIME_MODEL_PROBE_FAILED: 'Check the model named in the Configuration and the credential; the provider refused the startup check.',
  RUNTIME_MODEL_PROBE_TIMEOUT: 'Check that the runtime can reach the model provider (network policy, proxy, provider status).',
  RUNTIME_STARTUP_FAILED: 'Check the Configuration for settings the runtime rejects, then deploy again.',
  RUNTIME_CPU_STARVED: 'The cluster did not give the runtime enough CPU; ask an operator to check node capacity.',
  CONVERGENCE_DEADLINE_EXCEEDED: 'The runtime did not become ready in time; ask an operator to check the Compute Driver and the cluster.',
  REVISION_SUPERSEDED: 'A newer version was deployed; its result is the one that counts.',
  REVISION_STOPPED: 'The Agent was stopped while this version was deploying. Deploy again to resume.',
  AGENT_GATEWAY_UNAVAILABLE: 'The Agent gateway did not answer; ask an operator to check the runtime networking.',
  AGENT_GATEWAY_UNAUTHORIZED: 'Set gateway.auth.password to OPENCLAW_GATEWAY_PASSWORD in the Configuration and deploy again.',
  KUBERNETES_API_UNAVAILABLE: 'The Kubernetes API was unavailable; ask an operator to check the cluster.',
  HARNESS_AUTH_UNSUPPORTED: 'The selected Compute Driver cannot use this Harness authentication method; on Kubernetes bind an api_key (or, for dedicated Codex, codex_pat) Secret and deploy again.',
};

export function checkFor(code) { return CHECKS[code] || 'Ask an operator to look up the worker\u2019s log for this deployment.'; }

function elapsed(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

// deploymentTracker({namespaceId, agentId, revision, signal, onSettled}) → {element, stop()}.
export function deploymentTracker({ namespaceId, agentId, revision, signal, onSettled }) {
  const started = revision.createdAt ? new Date(revision.createdAt).getTime() : Date.now();
  const statusLine = h('p', { class: 'deploy-status', role: 'status' });
  const clock = h('span', { class: 'deploy-elapsed' });
  const timeline = h('ol', { class: 'timeline', 'aria-label': `Phases of version ${revision.revision}` });
  const result = h('div', { class: 'deploy-result' });
  const elapsedPart = h('span', {}, ' · elapsed ', clock);
  const element = h('div', { class: 'deployment', dataset: { revision: revision.id } },
    h('p', {}, `Version ${revision.revision} · admitted ${formatTime(revision.createdAt)}`, elapsedPart),
    statusLine, timeline, result);
  let lastPhase = '';
  let watched = false; // seen queued or running: the elapsed time and phase times mean something
  let timer = null;
  let ticker = null;
  let done = false;
  const stop = () => { done = true; if (timer) clearTimeout(timer); if (ticker) clearInterval(ticker); };
  signal.addEventListener('abort', stop, { once: true });
  const tick = () => { clock.textContent = elapsed(Date.now() - started); };
  tick();
  ticker = setInterval(tick, 1000);

  const phase = (label, code, at) => {
    const key = `${label}|${code || ''}`;
    if (key === lastPhase) return;
    lastPhase = key;
    timeline.append(h('li', {}, watched ? h('span', { class: 'timeline-at' }, `+${elapsed((at ? new Date(at).getTime() : Date.now()) - started)}`) : null, ' ', label,
      code ? [' ', h('code', {}, code)] : null));
  };

  const read = async () => {
    if (done) return;
    let d;
    try {
      d = await api.get(api.paths.deployment(namespaceId, agentId, revision.id), { signal });
    } catch (err) {
      if (isAbort(err)) return;
      replace(result, errorPanel(err, { denied: 'Reading the deployment needs agent_revision:read on this version.', retry: () => { replace(result); read(); } }));
      return;
    }
    replace(statusLine, badge(d.status), ' ', { queued: 'Waiting for a worker.', running: 'A worker is deploying it.', succeeded: 'Deployed.', failed: 'The deployment failed.' }[d.status] || '');
    const last = d.progress && d.progress.lastAttempt;
    if (d.status === 'queued' || d.status === 'running') {
      watched = true;
      if (last) phase(last.message, last.code, last.at); else phase(d.status === 'queued' ? 'Queued for a worker.' : 'Claimed by a worker.', '', null);
      timer = setTimeout(read, 1000);
      return;
    }
    stop();
    // A result recorded before this page opened has no elapsed time the page could measure.
    if (watched) clock.textContent = elapsed(Date.now() - started); else elapsedPart.hidden = true;
    if (d.status === 'succeeded') {
      phase('Active.', '', null);
      replace(result, h('div', { class: 'alert success' }, h('p', {}, `Version ${revision.revision} is active.`),
        d.warnings && d.warnings.length ? h('ul', {}, d.warnings.map((w) => h('li', {}, h('code', {}, w.code), ` ${w.pluginId}`))) : null));
      announce(`Version ${revision.revision} deployed.`);
    } else {
      phase('Failed.', d.error ? d.error.code : '', null);
      replace(result, h('div', { class: 'alert error', role: 'alert' },
        h('p', { class: 'alert-lead' }, d.error ? d.error.message : 'The deployment failed.'),
        h('p', { class: 'alert-meta' }, 'Code ', h('code', { class: 'error-code' }, d.error ? d.error.code : 'UNKNOWN')),
        h('p', {}, h('strong', {}, 'What to check: '), checkFor(d.error ? d.error.code : ''))));
      announce(`Version ${revision.revision} failed.`);
    }
    if (onSettled) onSettled(d);
  };
  read();
  return { element, stop };
}
