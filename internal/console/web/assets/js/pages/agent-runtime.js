// The Runtime tab of an Agent: what its revision's workload does now (Pods, containers, restarts,
// Events), refreshed every 10 seconds, and a log viewer that follows by polling the page's
// cursor every 2 seconds, reads a restarted container's previous instance, and downloads. All
// of it is read through the API's runtime routes; nothing here touches the cluster.

import * as api from '../api.js';
import { h, replace, formatTime, idText } from '../dom.js';
import { errorPanel, isAbort } from '../components/errors.js';
import { dataTable } from '../components/table.js';
import { badge } from '../components/status.js';

const REFRESH_MS = 10000;
const FOLLOW_MS = 2000;
const MAX_ROWS = 5000;

export function runtimeTab(panel, ctx, view) {
  const ns = ctx.namespaceId;
  const a = view.agent;
  const latest = view.revisions[view.revisions.length - 1];
  const revisionId = a.activeRevisionId || (latest && latest.id);
  if (!revisionId) {
    panel.append(h('p', {}, 'No version is deployed yet: deploy one to see its runtime.'));
    return;
  }
  const base = `${api.paths.deployment(ns, a.id, revisionId)}`;
  const root = h('div', { class: 'runtime' });
  const strip = h('section', { class: 'runtime-status', 'aria-labelledby': 'runtime-status-title' });
  const logs = h('section', { class: 'runtime-logs', 'aria-labelledby': 'runtime-logs-title' });
  root.append(h('p', { class: 'hint' }, 'Version ', idText(revisionId), a.activeRevisionId ? ' (active)' : ' (latest)'), strip, logs);
  panel.append(root);
  const alive = () => root.isConnected && !ctx.signal.aborted;

  let timer = null;
  const refresh = async () => {
    try {
      showStatus(strip, await api.get(`${base}/runtime`, { signal: ctx.signal }));
    } catch (err) {
      if (isAbort(err)) return;
      replace(strip, h('h2', { id: 'runtime-status-title' }, 'Status'), errorPanel(err, {
        denied: 'The runtime status needs agent:operate and agent:read on this Agent and read on the version.',
        title: err.code === 'NOT_IMPLEMENTED' ? 'The Compute Driver of this Installation has no runtime status.' : undefined,
      }));
    }
    if (alive()) timer = setTimeout(refresh, REFRESH_MS);
  };
  ctx.onCleanup(() => timer && clearTimeout(timer));
  refresh();
  logViewer(logs, ctx, a, revisionId, base, alive);
}

function showStatus(strip, rt) {
  const rows = [];
  for (const p of rt.pods) for (const c of p.containers) rows.push({ p, c });
  const events = [];
  for (const p of rt.pods) for (const e of p.events) events.push({ p, e });
  replace(strip, h('h2', { id: 'runtime-status-title' }, 'Status'),
    h('p', { class: 'hint' }, `Observed ${formatTime(rt.observedAt)}; refreshed every 10 seconds.`),
    dataTable({
      caption: 'Containers', rows, rowKey: (r) => r.p.uid + '/' + r.c.name, empty: 'No Pod of this version runs.',
      columns: [
        { label: 'Pod', cell: (r) => [h('code', {}, r.p.name), ' ', h('span', { class: 'hint' }, r.p.role)] },
        { label: 'Container', cell: (r) => r.c.name },
        { label: 'State', cell: (r) => [badge(r.c.state), r.c.reason ? [' ', h('code', { class: 'error-code' }, r.c.reason)] : null] },
        { label: 'Ready', cell: (r) => (r.c.ready ? 'yes' : 'no') },
        { label: 'Restarts', cell: (r) => String(r.c.restartCount) },
        { label: 'Last termination', cell: (r) => (r.c.lastTermination ? `exit ${r.c.lastTermination.exitCode}${r.c.lastTermination.reason ? ' ' + r.c.lastTermination.reason : ''}` : '—') },
      ],
    }),
    dataTable({
      caption: 'Recent events', rows: events, rowKey: (r) => `${r.p.uid}-${r.e.reason}-${r.e.lastObservedAt}`, empty: 'No recent events.',
      columns: [
        { label: 'When', cell: (r) => formatTime(r.e.lastObservedAt) },
        { label: 'Type', cell: (r) => r.e.type },
        { label: 'Reason', cell: (r) => r.e.reason },
        { label: 'Message', cell: (r) => [r.e.container ? `${r.e.container}: ` : '', r.e.message, r.e.count > 1 ? ` (×${r.e.count})` : ''] },
      ],
    }));
}

function logViewer(section, ctx, agent, revisionId, base, alive) {
  const source = h('select', { id: 'runtime-log-source' },
    h('option', { value: 'gateway' }, 'Gateway'), agent.executionMode === 'dedicated' ? h('option', { value: 'agent' }, 'Agent (Harness)') : null);
  const previous = h('input', { type: 'checkbox', id: 'runtime-log-previous' });
  const follow = h('input', { type: 'checkbox', id: 'runtime-log-follow' });
  const debug = h('input', { type: 'checkbox', id: 'runtime-log-debug' });
  const download = h('a', { class: 'button secondary', download: '' }, 'Download');
  const output = h('ol', { class: 'log-lines', 'aria-live': 'off' });
  const status = h('p', { class: 'hint', role: 'status' });
  let cursor = null;
  let timer = null;
  let generation = 0;
  const query = () => {
    const q = { source: source.value, tailLines: '200', minLevel: debug.checked ? 'debug' : 'info' };
    if (previous.checked) q.previous = 'true';
    return q;
  };
  const updateDownload = () => {
    const q = new URLSearchParams({ ...query(), download: 'true' });
    q.delete('tailLines');
    download.href = `${base}/runtime/logs?${q}`;
  };
  const read = async (mine) => {
    const q = query();
    if (cursor) q.cursor = cursor;
    try {
      const page = await api.get(`${base}/runtime/logs`, { query: q, signal: ctx.signal });
      if (mine !== generation) return;
      for (const r of page.records) output.append(logRow(r));
      while (output.children.length > MAX_ROWS) output.firstChild.remove();
      cursor = page.cursor;
      status.textContent = page.records.length ? '' : (cursor && follow.checked ? 'Waiting for new lines…' : 'No lines.');
    } catch (err) {
      if (isAbort(err) || mine !== generation) return;
      follow.checked = false;
      replace(status, errorPanel(err, { denied: 'Reading log text needs agent:read_logs (or administer) and agent:read on this Agent.' }));
      return;
    }
    if (follow.checked && !previous.checked && alive()) timer = setTimeout(() => read(mine), FOLLOW_MS);
  };
  const restart = () => {
    generation += 1;
    if (timer) clearTimeout(timer);
    cursor = null;
    replace(output);
    previous.disabled = follow.checked;
    updateDownload();
    read(generation);
  };
  for (const control of [source, previous, debug]) control.addEventListener('change', restart);
  follow.addEventListener('change', () => { previous.disabled = follow.checked; if (follow.checked) { if (timer) clearTimeout(timer); read(generation); } });
  ctx.onCleanup(() => timer && clearTimeout(timer));
  replace(section, h('h2', { id: 'runtime-logs-title' }, 'Logs'),
    h('p', { class: 'hint' }, 'A bounded, redacted page of the container output. Redaction is best-effort: treat downloads as sensitive. Each new view and each download is audited.'),
    h('div', { class: 'log-controls' },
      h('label', { for: 'runtime-log-source' }, 'Source'), source,
      h('label', {}, previous, ' Previous instance'),
      h('label', {}, follow, ' Follow'),
      h('label', {}, debug, ' Include debug'),
      download),
    status, output);
  updateDownload();
  read(generation);
}

function logRow(r) {
  const when = r.time ? formatTime(r.time) : '—';
  if (r.type === 'gap') return h('li', { class: 'log-gap' }, h('span', { class: 'log-time' }, when), ' ', h('strong', {}, 'Gap: '), r.remedy);
  if (r.type === 'withheld') return h('li', { class: 'log-withheld' }, h('span', { class: 'log-time' }, when), ' ', `${r.count} line(s) withheld (${r.reason})`);
  const fields = r.fields ? Object.keys(r.fields).sort().map((k) => ` ${k}=${r.fields[k]}`).join('') : '';
  return h('li', { class: `log-line level-${r.level}` }, h('span', { class: 'log-time' }, when), ' ',
    h('span', { class: 'log-level' }, r.level.toUpperCase()), ' ', h('span', { class: 'log-kind' }, r.kind),
    r.subsystem ? ` [${r.subsystem}]` : '', ' ', h('span', { class: 'log-message' }, r.message), fields);
}
