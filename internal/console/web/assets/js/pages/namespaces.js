// Namespaces: the readable ones with their live status, create, and delete with confirmation. A
// refused delete of a non-empty Namespace lists what is left, with links.

import * as api from '../api.js';
import { h, replace, announce, formatTime, idText } from '../dom.js';
import * as router from '../router.js';
import { confirmDialog } from '../components/dialog.js';
import { formDialog } from '../components/formdialog.js';
import { errorPanel, isAbort } from '../components/errors.js';
import { field } from '../components/form.js';
import { dataTable } from '../components/table.js';
import { badge } from '../components/status.js';
import { poll } from '../components/poll.js';

const TRANSIENT = new Set(['provisioning', 'deleting']);

export default {
  title: 'Namespaces',
  namespaced: false,
  render(ctx) {
    const list = h('div', { class: 'list-region', 'aria-live': 'polite', 'aria-busy': 'true' }, h('p', { class: 'loading' }, 'Loading Namespaces…'));
    const notice = h('div');
    const createButton = h('button', { type: 'button', class: 'button', on: { click: () => create() } }, 'Create Namespace');
    replace(ctx.main,
      h('div', { class: 'page-header' }, h('h1', {}, 'Namespaces'), h('div', { class: 'page-actions' }, createButton)),
      h('p', { class: 'lead' }, 'Isolated spaces for Agents, their Configurations and Secrets. A new Namespace is provisioning until the worker has made it ready.'),
      notice, list);
    let rows = [];
    let stopPoll = null;

    const show = () => {
      replace(list, dataTable({
        caption: 'Namespaces', rows, rowKey: (n) => n.id,
        empty: 'No readable Namespace. Create one, or ask an administrator for access.',
        columns: [
          { label: 'Name', cell: (n) => h('a', { href: router.href('/console/agents', { namespace: n.id }) }, n.name) },
          { label: 'Status', cell: (n) => badge(n.status) },
          { label: 'Id', cell: (n) => idText(n.id) },
          { label: 'Created', cell: (n) => formatTime(n.createdAt) },
          {
            label: 'Actions', className: 'actions',
            cell: (n) => (n.status === 'deleting' ? h('span', { class: 'hint' }, 'Deleting…')
              : h('button', { type: 'button', class: 'button danger small', 'aria-label': `Delete Namespace ${n.name}`, on: { click: () => remove(n) } }, 'Delete')),
          },
        ],
      }));
      list.setAttribute('aria-busy', 'false');
    };

    const load = async () => {
      const before = new Map(rows.map((n) => [n.id, n]));
      rows = await api.list(api.paths.namespaces, { signal: ctx.signal });
      for (const n of rows) {
        const old = before.get(n.id);
        if (old && old.status !== n.status) announce(`Namespace ${n.name} is ${n.status}.`);
        before.delete(n.id);
      }
      for (const gone of before.values()) if (gone.status === 'deleting') announce(`Namespace ${gone.name} was deleted.`);
      show();
      watch();
      return rows;
    };

    // watch follows provisioning and deleting Namespaces until they settle.
    const watch = () => {
      if (stopPoll || !rows.some((n) => TRANSIENT.has(n.status))) return;
      stopPoll = poll(async () => {
        await load();
        const more = rows.some((n) => TRANSIENT.has(n.status));
        if (!more) { stopPoll = null; ctx.refreshNamespaces(); }
        return more;
      }, { interval: 1000, signal: ctx.signal, onError: (err) => { stopPoll = null; replace(notice, errorPanel(err, { retry: reload })); } });
    };

    const reload = () => {
      replace(notice);
      load().catch((err) => { if (!isAbort(err)) replace(list, errorPanel(err, { retry: reload })); });
    };

    function create() {
      const name = field({ label: 'Name', name: 'name', path: '/name', required: true, hint: '1 to 200 characters. Names stay reserved forever, also after deletion.' });
      formDialog({
        title: 'Create a Namespace', fields: [name], submitLabel: 'Create',
        denied: 'Creating Namespaces needs namespace:create on the Installation.',
        onUnknown: reload,
        send: async () => {
          const { data } = await api.post(api.paths.namespaces, { name: name.control.value });
          announce(`Namespace ${data.name} created; provisioning.`);
          rows.push(data);
          show();
          watch();
          ctx.refreshNamespaces();
        },
      });
    }

    async function remove(n) {
      const ok = await confirmDialog({
        title: `Delete Namespace ${n.name}?`,
        message: ['The worker tears down its runtime resources. Its name stays reserved.', 'Only an empty Namespace can be deleted.'],
        confirmLabel: 'Delete Namespace', danger: true,
      });
      if (!ok) return;
      replace(notice);
      try {
        const { data } = await api.del(api.paths.namespace(n.id));
        Object.assign(n, data);
        announce(`Namespace ${n.name} is being deleted.`);
        show();
        watch();
      } catch (err) {
        if (err.code === 'NAMESPACE_NOT_EMPTY') {
          replace(notice, await leftovers(n, err, ctx.signal));
        } else {
          replace(notice, errorPanel(err, { denied: `Deleting ${n.name} needs namespace:delete on it.`, refresh: reload }));
        }
      }
    }

    reload();
  },
};

// leftovers explains a refused delete: the API's message, then what the console can list.
async function leftovers(n, err, signal) {
  const links = [];
  const read = async (path) => { try { return await api.list(path, { signal }); } catch { return []; } };
  const [agents, secrets, accounts] = await Promise.all([read(api.paths.agents(n.id)), read(api.paths.secrets(n.id)), read(api.paths.serviceAccounts(n.id))]);
  for (const a of agents) links.push(h('li', {}, 'Agent ', h('a', { href: router.href(`/console/agents/${a.id}`, { namespace: n.id }) }, a.name)));
  for (const s of secrets) links.push(h('li', {}, 'Secret ', h('a', { href: router.href('/console/secrets', { namespace: n.id, secret: s.id }) }, s.name)));
  for (const s of accounts) links.push(h('li', {}, 'ServiceAccount ', h('code', {}, s.name), ' (delete it with occ service-account delete)'));
  return h('div', { class: 'alert warning', role: 'alert' },
    h('p', { class: 'alert-lead' }, `Namespace ${n.name} is not empty.`),
    h('p', { class: 'alert-message' }, err.message),
    links.length ? h('ul', { class: 'leftovers' }, links) : null,
    h('p', {}, 'Configurations have no list: those not used by an Agent are deleted with occ configuration delete.'),
    h('p', { class: 'alert-meta' }, 'Code ', h('code', { class: 'error-code' }, err.code), ' · Request ', h('code', { class: 'request-id' }, err.requestId)));
}
