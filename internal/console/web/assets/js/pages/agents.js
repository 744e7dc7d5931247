// Agents of the selected Namespace: desired state, active revision and the latest deployment's
// result, with a name filter. Two reads: the Agents and the latest deployment of each.

import * as api from '../api.js';
import { h, replace, idText } from '../dom.js';
import * as router from '../router.js';
import { errorPanel, isAbort } from '../components/errors.js';
import { dataTable } from '../components/table.js';
import { badge } from '../components/status.js';

export function deploymentCell(d) {
  if (!d) return h('span', { class: 'hint' }, 'Not deployed');
  return h('span', { class: 'deployment-cell' }, `v${d.revision} `, badge(d.status),
    d.error ? h('code', { class: 'error-code' }, ` ${d.error.code}`) : null);
}

export default {
  title: 'Agents',
  namespaced: true,
  render(ctx) {
    const ns = ctx.namespaceId;
    const filter = h('input', { id: 'agent-filter', type: 'search', value: ctx.query.get('q') || '', autocomplete: 'off' });
    const count = h('p', { class: 'hint', role: 'status' });
    const list = h('div', { class: 'list-region', 'aria-busy': 'true' }, h('p', { class: 'loading' }, 'Loading Agents…'));
    replace(ctx.main,
      h('div', { class: 'page-header' },
        h('h1', {}, 'Agents'),
        h('div', { class: 'page-actions' },
          h('button', { type: 'button', class: 'button secondary', on: { click: () => load() } }, 'Refresh'),
          h('a', { class: 'button', href: router.href('/console/agents/new') }, 'Create Agent'))),
      h('p', { class: 'lead' }, `In Namespace ${ctx.namespace.name}. The console shows what OCC recorded; the runtime itself is not probed.`),
      h('div', { class: 'filter-row' }, h('label', { for: 'agent-filter' }, 'Find by name'), filter, count),
      list);
    let agents = [];
    let latest = new Map();

    const show = () => {
      const needle = filter.value.trim().toLowerCase();
      const rows = needle ? agents.filter((a) => a.name.toLowerCase().includes(needle)) : agents;
      count.textContent = needle ? `${rows.length} of ${agents.length} Agents match.` : `${agents.length} Agents.`;
      replace(list, dataTable({
        caption: 'Agents', rows, rowKey: (a) => a.id,
        empty: agents.length ? 'No Agent matches.' : 'No Agent yet. Create one to get started.',
        columns: [
          { label: 'Name', cell: (a) => h('a', { href: router.href(`/console/agents/${a.id}`) }, a.name) },
          { label: 'Mode', cell: (a) => a.executionMode },
          { label: 'Desired', cell: (a) => (a.status === 'deleting' ? badge('deleting') : badge(a.desiredRuntimeState)) },
          { label: 'Active revision', cell: (a) => activeRevision(a, latest.get(a.id)) },
          { label: 'Latest deployment', cell: (a) => deploymentCell(latest.get(a.id)) },
        ],
      }));
      list.setAttribute('aria-busy', 'false');
      // A mark for the console's performance measurement: the list is on screen.
      performance.mark('occ:agents-rendered');
    };
    filter.addEventListener('input', () => { router.setQuery({ q: filter.value }); show(); });

    async function load() {
      list.setAttribute('aria-busy', 'true');
      try {
        const [a, d] = await Promise.all([
          api.list(api.paths.agents(ns), { signal: ctx.signal }),
          api.list(api.paths.latestDeployments(ns), { signal: ctx.signal }).catch((err) => { if (err.status === 403) return []; throw err; }),
        ]);
        agents = a;
        latest = new Map(d.map((x) => [x.agentId, x]));
        show();
      } catch (err) {
        if (!isAbort(err)) replace(list, errorPanel(err, { denied: 'Listing Agents needs namespace:read on this Namespace.', retry: load }));
      }
    }
    load();
  },
};

function activeRevision(agent, latest) {
  if (!agent.activeRevisionId) return h('span', { class: 'hint' }, 'None');
  if (latest && latest.deploymentId === agent.activeRevisionId) return `v${latest.revision}`;
  return idText(agent.activeRevisionId);
}
