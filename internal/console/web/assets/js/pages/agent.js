// One Agent: overview, versions (every revision with its deployment result and read-only
// snapshot) and its Configuration (edited with a generation check). Deploy shows each phase the
// worker reports until the result; stop and delete confirm first and then follow the status.
// Writes are never repeated by the console; an unknown outcome offers Refresh.
//
// The tabs are a list; the Runtime tab (agent-runtime.js) shows what the deployed workload does.

import * as api from '../api.js';
import { h, replace, announce, formatTime, idText } from '../dom.js';
import * as router from '../router.js';
import { confirmDialog } from '../components/dialog.js';
import { errorPanel, isAbort } from '../components/errors.js';
import { dataTable, definitionList } from '../components/table.js';
import { badge } from '../components/status.js';
import { poll } from '../components/poll.js';
import { tabView } from '../components/tabs.js';
import { jsonEditor } from '../components/jsoneditor.js';
import { deploymentTracker } from './agent-deploy.js';
import { runtimeTab } from './agent-runtime.js';

export default {
  title: 'Agent',
  namespaced: true,
  render(ctx) {
    const ns = ctx.namespaceId;
    const id = ctx.params.agentId;
    const view = { agent: null, revisions: [], deployments: new Map(), configuration: null, secretNames: new Map() };
    const heading = h('h1', {}, 'Agent');
    const subtitle = h('p', { class: 'lead' });
    const notice = h('div', { class: 'notices' });
    const actions = h('div', { class: 'page-actions' });
    const activity = h('section', { class: 'card activity', 'aria-labelledby': 'activity-title' });
    const body = h('div', { 'aria-busy': 'true' }, h('p', { class: 'loading' }, 'Loading the Agent…'));
    replace(ctx.main, h('p', {}, h('a', { href: router.href('/console/agents') }, '← Agents')),
      h('div', { class: 'page-header' }, heading, actions), subtitle, notice, activity, body);
    let tracker = null;
    ctx.onCleanup(() => tracker && tracker.stop());

    const secretName = async (secretId) => {
      if (view.secretNames.has(secretId)) return view.secretNames.get(secretId);
      let name = null;
      try { name = (await api.get(api.paths.secret(ns, secretId), { signal: ctx.signal })).name; } catch { name = null; }
      view.secretNames.set(secretId, name);
      return name;
    };
    const secretLabel = (ref) => {
      const out = h('span', {}, idText(ref.id));
      secretName(ref.id).then((n) => replace(out, n ? [h('a', { href: router.href('/console/secrets', { secret: ref.id }) }, n), ' ', idText(ref.id)]
        : [idText(ref.id), ' ', h('span', { class: 'hint' }, 'Metadata unavailable')]));
      return out;
    };
    const harnessText = (ha) => {
      if (!ha) return h('span', { class: 'hint' }, 'Not set: deploy is refused until it is.');
      if (!ha.source) return ha.method;
      return h('span', {}, `${ha.method} · `, ha.source.kind === 'secret' ? secretLabel(ha.source) : idText(ha.source.id));
    };

    async function load() {
      try {
        view.agent = await api.get(api.paths.agent(ns, id), { signal: ctx.signal });
      } catch (err) {
        if (isAbort(err)) return;
        replace(body, errorPanel(err, { denied: 'Reading this Agent needs agent:read on it.', retry: load }));
        return;
      }
      const [revisions, configuration] = await Promise.all([
        api.list(api.paths.revisions(ns, id), { signal: ctx.signal }).catch((err) => ({ error: err })),
        api.get(api.paths.configuration(ns, view.agent.configurationId), { signal: ctx.signal }).catch((err) => ({ error: err })),
      ]);
      view.revisions = revisions.error ? [] : revisions;
      view.revisionsError = revisions.error || null;
      view.configuration = configuration.error ? null : configuration;
      view.configurationError = configuration.error || null;
      showHeader();
      showActivity();
      showTabs();
    }

    function showHeader() {
      const a = view.agent;
      document.title = `${a.name} · OCC console`;
      replace(heading, a.name);
      replace(subtitle, `${a.executionMode === 'dedicated' ? 'Dedicated Codex' : 'Embedded OpenClaw'} · Namespace ${ctx.namespace.name} · `,
        idText(a.id), ' ', a.status === 'deleting' ? badge('deleting') : badge(a.desiredRuntimeState, `desired ${a.desiredRuntimeState}`));
      const deleting = a.status === 'deleting';
      replace(actions,
        h('button', { type: 'button', class: 'button', disabled: deleting, on: { click: deploy } }, 'Deploy new version'),
        h('button', { type: 'button', class: 'button secondary', disabled: deleting || a.desiredRuntimeState === 'stopped', on: { click: stop } }, 'Stop'),
        h('button', { type: 'button', class: 'button danger', disabled: deleting, on: { click: remove } }, 'Delete'),
        h('button', { type: 'button', class: 'button secondary', on: { click: () => { replace(notice); load(); } } }, 'Refresh'));
    }

    // blockWrites disables the write actions after an unknown outcome, until Refresh reads the state.
    function blockWrites(err) {
      if (!err.unknownOutcome) return;
      for (const b of actions.querySelectorAll('button')) if (b.textContent !== 'Refresh') b.disabled = true;
    }

    function latestRevision() { return view.revisions.length ? view.revisions[view.revisions.length - 1] : null; }

    function showActivity() {
      const latest = latestRevision();
      replace(activity, h('h2', { id: 'activity-title' }, 'Deployment activity'));
      if (!latest) {
        activity.append(h('p', { class: 'hint' }, view.revisionsError ? 'Versions are not readable.' : 'Never deployed. Deploy new version admits the saved Configuration as version 1.'));
        return;
      }
      if (tracker) tracker.stop();
      tracker = deploymentTracker({
        namespaceId: ns, agentId: id, revision: latest, signal: ctx.signal,
        onSettled: (deployment) => {
          view.deployments.set(latest.id, deployment);
          // The Agent's active revision changes when a deployment settles.
          api.get(api.paths.agent(ns, id), { signal: ctx.signal }).then((a) => { view.agent = a; showHeader(); refreshTab(); }).catch(() => {});
        },
      });
      activity.append(tracker.element);
    }

    let refreshTab = () => {};
    function showTabs() {
      const tabs = agentTabs({ ctx, view, harnessText, secretLabel, reload: load, notice });
      const selected = ctx.query.get('tab') || 'overview';
      let current = null;
      const render = () => { current = tabView({ tabs, selected: router.query().get('tab') || selected, label: 'Agent' }); replace(body, current); body.setAttribute('aria-busy', 'false'); };
      refreshTab = () => { const panel = body.querySelector('[role=tablist] [aria-selected=true]'); if (panel && panel.dataset.tab === 'overview') render(); };
      render();
    }

    async function deploy() {
      replace(notice);
      try {
        const { data } = await api.post(`${api.paths.agent(ns, id)}/deploy`);
        view.revisions.push(data);
        announce(`Version ${data.revision} admitted; deploying.`);
        showActivity();
        view.agent.desiredRuntimeState = 'running';
        showHeader();
        showTabs();
      } catch (err) {
        blockWrites(err);
        replace(notice, errorPanel(err, {
          denied: 'Deploying needs agent:deploy on this Agent, configuration:read on its Configuration, and secret:operate on every Secret it uses — for you and for the Agent\u2019s own ServicePrincipal.',
          refresh: () => { replace(notice); load(); },
        }));
      }
    }

    async function stop() {
      const ok = await confirmDialog({
        title: `Stop ${view.agent.name}?`,
        message: ['The worker stops the running version. Its revisions, Configuration and Secrets are kept; deploy again to resume.'],
        confirmLabel: 'Stop Agent', danger: true,
      });
      if (!ok) return;
      replace(notice);
      try {
        const { data } = await api.post(`${api.paths.agent(ns, id)}/stop`);
        view.agent = data;
        showHeader();
        const status = h('p', { role: 'status' }, 'Stop requested; waiting for the worker to stop the runtime…');
        replace(notice, h('div', { class: 'alert info' }, status));
        poll(async () => {
          const a = await api.get(api.paths.agent(ns, id), { signal: ctx.signal });
          view.agent = a;
          if (!a.activeRevisionId) {
            status.textContent = 'Stopped: no version is active.';
            showHeader();
            showTabs();
            return false;
          }
          return true;
        }, { interval: 1000, signal: ctx.signal, onError: (err) => replace(notice, errorPanel(err, { refresh: load })) });
      } catch (err) {
        blockWrites(err);
        replace(notice, errorPanel(err, { denied: 'Stopping needs agent:operate on this Agent.', refresh: () => { replace(notice); load(); } }));
      }
    }

    async function remove() {
      const a = view.agent;
      const ok = await confirmDialog({
        title: `Delete ${a.name} permanently?`,
        message: ['The Agent, its revision history and its runtime are removed. Its Configuration and Secrets stay in the Namespace.'],
        confirmLabel: 'Permanently delete Agent', danger: true,
      });
      if (!ok) return;
      replace(notice);
      try {
        const { data } = await api.del(api.paths.agent(ns, id));
        view.agent = data;
        showHeader();
        const status = h('p', { role: 'status' }, 'Deleting: the worker is removing the runtime…');
        replace(notice, h('div', { class: 'alert info' }, status));
        poll(async () => {
          try {
            await api.get(api.paths.agent(ns, id), { signal: ctx.signal });
            return true;
          } catch (err) {
            if (err.status !== 404) throw err;
            announce(`Agent ${a.name} deleted.`);
            router.navigate(router.href('/console/agents', { deleted: a.name }));
            return false;
          }
        }, { interval: 1000, signal: ctx.signal, onError: (err) => replace(notice, errorPanel(err, { refresh: load })) });
      } catch (err) {
        blockWrites(err);
        replace(notice, errorPanel(err, { denied: 'Deleting needs agent:delete on this Agent; read or operate is not enough.', refresh: () => { replace(notice); load(); } }));
      }
    }

    if (ctx.query.get('created')) notice.append(h('div', { class: 'alert success', role: 'status' }, h('p', {}, 'Agent created. It is stopped until you deploy it.')));
    load();
  },
};

// agentTabs lists the tabs of the Agent page.
function agentTabs({ ctx, view, harnessText, secretLabel, reload, notice }) {
  const ns = ctx.namespaceId;
  return [
    { id: 'overview', label: 'Overview', render: (panel) => overview(panel, view, harnessText) },
    { id: 'versions', label: 'Versions', render: (panel) => versions(panel, ctx, view, secretLabel) },
    { id: 'configuration', label: 'Configuration', render: (panel) => configurationTab(panel, ctx, view, ns, reload, notice, secretLabel) },
    { id: 'runtime', label: 'Runtime', render: (panel) => runtimeTab(panel, ctx, view) },
  ];
}

function overview(panel, view, harnessText) {
  const a = view.agent;
  const active = view.revisions.find((r) => r.id === a.activeRevisionId);
  const latest = view.revisions[view.revisions.length - 1];
  append(panel, definitionList([
    ['Status', a.status === 'deleting' ? badge('deleting') : badge(a.status)],
    ['Desired state', badge(a.desiredRuntimeState)],
    ['Active version', a.activeRevisionId ? (active ? `v${active.revision}` : idText(a.activeRevisionId)) : 'None'],
    ['Latest version', latest ? `v${latest.revision}` : 'None'],
    ['Execution mode', a.executionMode],
    ['Harness', latest && latest.harness ? `${latest.harness.id} ${latest.harness.version}` : (a.executionMode === 'dedicated' ? 'Codex (pinned at deploy)' : 'OpenClaw (pinned at deploy)')],
    ['Harness authentication', harnessText(a.harnessAuth)],
    ['ServicePrincipal', idText(a.servicePrincipalId)],
    ['Configuration', view.configuration ? [idText(view.configuration.id), ` generation ${view.configuration.generation}`] : [idText(a.configurationId), ' ', h('span', { class: 'hint' }, 'not readable')]],
    ['Created', formatTime(a.createdAt)],
  ]));
}

function append(panel, ...nodes) { panel.append(...nodes); }

function versions(panel, ctx, view, secretLabel) {
  const ns = ctx.namespaceId;
  if (view.revisionsError) { panel.append(errorPanel(view.revisionsError, { denied: 'Reading versions needs agent:read on this Agent.' })); return; }
  const detail = h('div', { class: 'revision-detail' });
  const statusCells = new Map();
  const rows = [...view.revisions].reverse();
  panel.append(dataTable({
    caption: 'Versions', rows, rowKey: (r) => r.id, empty: 'No version yet.',
    columns: [
      { label: 'Version', cell: (r) => h('button', { type: 'button', class: 'link-button', on: { click: () => showRevision(r) } }, `v${r.revision}`, r.id === view.agent.activeRevisionId ? ' (active)' : '') },
      { label: 'Admitted', cell: (r) => formatTime(r.createdAt) },
      { label: 'Configuration', cell: (r) => (r.configurationGeneration ? `generation ${r.configurationGeneration}` : '—') },
      { label: 'Deployment', cell: (r) => { const c = h('span', {}, '…'); statusCells.set(r.id, c); return c; } },
    ],
  }), detail);
  for (const r of rows) {
    const fill = (d) => replace(statusCells.get(r.id), badge(d.status), d.error ? [' ', h('code', { class: 'error-code' }, d.error.code)] : null);
    if (view.deployments.has(r.id)) { fill(view.deployments.get(r.id)); continue; }
    api.get(api.paths.deployment(ns, view.agent.id, r.id), { signal: ctx.signal }).then((d) => {
      if (d.status === 'succeeded' || d.status === 'failed') view.deployments.set(r.id, d);
      fill(d);
    }).catch((err) => { if (!isAbort(err)) replace(statusCells.get(r.id), h('span', { class: 'hint' }, `unavailable (${err.code})`)); });
  }
  function showRevision(r) {
    const bindings = Object.entries(r.secretBindings || {});
    replace(detail, h('h3', {}, `Version ${r.revision}`), h('p', { class: 'hint' }, 'An admitted version is immutable: it cannot be edited or redeployed. Deploy new version admits the current Configuration.'),
      definitionList([
        ['Id', idText(r.id)],
        ['Harness', r.harness ? `${r.harness.id} ${r.harness.version} (${r.harness.mode})` : '—'],
        ['Compute', r.compute ? `${r.compute.id} (${r.compute.implementation})` : '—'],
        ['Harness authentication', r.harnessAuth ? [r.harnessAuth.method, r.harnessAuth.source ? [' · ', secretLabel(r.harnessAuth.source)] : null] : '—'],
        ['Secret bindings', bindings.length ? h('ul', { class: 'plain' }, bindings.map(([k, b]) => h('li', {}, h('code', {}, k), ' → ', secretLabel(b.source)))) : 'None'],
        ['Configuration', r.configurationId ? [idText(r.configurationId), ` generation ${r.configurationGeneration}`] : '—'],
      ]),
      h('details', { open: true }, h('summary', {}, 'Admitted native configuration'), h('pre', { class: 'code' }, JSON.stringify(r.configuration || {}, null, 2))));
    detail.querySelector('h3').setAttribute('tabindex', '-1');
    detail.querySelector('h3').focus();
  }
}

function configurationTab(panel, ctx, view, ns, reload, notice, secretLabel) {
  if (!view.configuration) {
    panel.append(view.configurationError ? errorPanel(view.configurationError, { denied: 'Reading the Configuration needs configuration:read on it.', retry: reload }) : h('p', {}, 'No Configuration.'));
    return;
  }
  const cfg = view.configuration;
  const editor = jsonEditor({ label: 'Configuration', value: cfg.values });
  const bindings = Object.entries(cfg.secretBindings || {});
  const failure = h('div');
  const save = h('button', { type: 'submit', class: 'button' }, 'Save Configuration');
  const form = h('form', { class: 'form', novalidate: true },
    h('p', { class: 'hint' }, `Generation ${cfg.generation}. Saving changes the draft only; deploy a new version to use it. Agents sharing this Configuration use it on their next deployment.`),
    editor.row,
    h('div', { class: 'field' }, h('p', { class: 'label' }, 'Secret bindings'),
      bindings.length ? h('ul', { class: 'plain' }, bindings.map(([k, b]) => h('li', {}, h('code', {}, k), ' → ', secretLabel(b.source)))) : h('p', { class: 'hint' }, 'None')),
    failure, h('div', { class: 'form-actions' }, save));
  panel.append(form);
  let uncertain = false;
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (uncertain || !editor.valid()) return;
    replace(failure);
    save.disabled = true;
    try {
      // expectedGeneration: a change made since this page read the Configuration is refused (409), never overwritten.
      const { data } = await api.patch(api.paths.configuration(ns, cfg.id), { values: editor.value(), expectedGeneration: cfg.generation });
      view.configuration = data;
      save.disabled = false;
      announce(`Configuration saved: generation ${data.generation}.`);
      replace(failure, h('div', { class: 'alert success', role: 'status' }, h('p', {}, `Saved as generation ${data.generation}. Deploy new version to use it.`)));
      form.querySelector('.hint').textContent = `Generation ${data.generation}. Saving changes the draft only; deploy a new version to use it.`;
      cfg.generation = data.generation;
    } catch (err) {
      save.disabled = false;
      if (err.unknownOutcome) { uncertain = true; save.disabled = true; }
      const rest = editor.showDetails(err.details);
      if (err.status === 409) {
        replace(failure, h('div', { class: 'alert warning', role: 'alert' },
          h('p', { class: 'alert-lead' }, 'The Configuration changed since this page read it. Nothing was saved.'),
          h('p', {}, 'Reload to see the current version; your edits are not kept.'),
          h('p', { class: 'alert-meta' }, 'Code ', h('code', { class: 'error-code' }, err.code), ' · Request ', h('code', { class: 'request-id' }, err.requestId)),
          h('div', { class: 'alert-actions' }, h('button', { type: 'button', class: 'button', on: { click: () => { replace(notice); reload(); } } }, 'Reload'))));
        return;
      }
      replace(failure, errorPanel(err, {
        details: rest,
        denied: 'Saving needs configuration:update on it and secret:operate on its bound Secrets.',
        refresh: () => { replace(notice); reload(); },
      }));
    }
  });
}
