// Secrets of the selected Namespace: metadata and consumers, create, replace a value (masked,
// never read back), and delete (a refusal names the consumers).

import * as api from '../api.js';
import { h, replace, announce, idText } from '../dom.js';
import * as router from '../router.js';
import { confirmDialog } from '../components/dialog.js';
import { formDialog } from '../components/formdialog.js';
import { errorPanel, isAbort } from '../components/errors.js';
import { field } from '../components/form.js';
import { dataTable, definitionList } from '../components/table.js';

export default {
  title: 'Secrets',
  namespaced: true,
  render(ctx) {
    const ns = ctx.namespaceId;
    const list = h('div', { 'aria-busy': 'true' }, h('p', { class: 'loading' }, 'Loading Secrets…'));
    const detail = h('section', { class: 'secret-detail', 'aria-live': 'polite' });
    const notice = h('div');
    replace(ctx.main,
      h('div', { class: 'page-header' }, h('h1', {}, 'Secrets'),
        h('div', { class: 'page-actions' }, h('button', { type: 'button', class: 'button', on: { click: () => create() } }, 'Create Secret'))),
      h('p', { class: 'lead' }, `In Namespace ${ctx.namespace.name}. Values are stored by the Secret Driver and never shown again.`),
      notice, list, detail);
    let secrets = [];

    const show = () => {
      replace(list, dataTable({
        caption: 'Secrets', rows: secrets, rowKey: (s) => s.id, empty: 'No readable Secret.',
        columns: [
          { label: 'Name', cell: (s) => h('a', { href: router.href('/console/secrets', { secret: s.id }) }, s.name) },
          { label: 'Id', cell: (s) => idText(s.id) },
        ],
      }));
      list.setAttribute('aria-busy', 'false');
    };

    const load = async () => {
      try {
        secrets = await api.list(api.paths.secrets(ns), { signal: ctx.signal });
        show();
      } catch (err) {
        if (!isAbort(err)) replace(list, errorPanel(err, { denied: 'Listing Secrets needs namespace:read here.', retry: load }));
      }
      const selected = ctx.query.get('secret');
      if (selected) open(selected);
    };

    async function open(id) {
      replace(detail, h('p', { class: 'loading' }, 'Loading the Secret…'));
      let s;
      try {
        s = await api.get(api.paths.secret(ns, id), { signal: ctx.signal });
      } catch (err) {
        if (!isAbort(err)) replace(detail, errorPanel(err, { denied: 'Reading this Secret needs secret:read on it.' }));
        return;
      }
      const consumers = (s.consumers || []).map((c) => h('li', {}, c.kind === 'agent'
        ? ['Agent ', h('a', { href: router.href(`/console/agents/${c.id}`) }, c.id)] : [`${c.kind} `, idText(c.id)]));
      replace(detail, h('h2', { tabindex: '-1' }, s.name),
        definitionList([
          ['Id', idText(s.id)],
          ['Reference', h('code', {}, `${s.ref.kind}/${s.ref.id}`)],
          ['Consumers', consumers.length ? h('ul', { class: 'plain' }, consumers) : 'None that you can read'],
        ]),
        h('div', { class: 'form-actions' },
          h('button', { type: 'button', class: 'button secondary', on: { click: () => replaceValue(s) } }, 'Replace value'),
          h('button', { type: 'button', class: 'button danger', on: { click: () => remove(s) } }, 'Delete')));
      // Agents' names where readable.
      for (const c of s.consumers || []) {
        if (c.kind !== 'agent') continue;
        api.get(api.paths.agent(ns, c.id), { signal: ctx.signal }).then((a) => {
          const link = detail.querySelector(`a[href*="${c.id}"]`);
          if (link) link.textContent = a.name;
        }).catch(() => {});
      }
    }

    function valueDialog({ title, withName, submitLabel, send, denied }) {
      const name = withName ? field({ label: 'Name', name: 'name', path: '/name', required: true }) : null;
      const value = field({ label: 'Value', name: 'value', type: 'password', path: '/value', required: true, autocomplete: 'new-password', hint: 'Masked; never shown again.' });
      formDialog({
        title, fields: [name, value].filter(Boolean), submitLabel, denied, onUnknown: load,
        send: async () => {
          await send(name ? name.control.value : null, value.control.value);
          value.control.value = '';
        },
      });
    }

    function create() {
      valueDialog({
        title: 'Create a Secret', withName: true, submitLabel: 'Create Secret', denied: 'Creating Secrets needs secret:create here.',
        send: async (name, value) => {
          const { data } = await api.post(api.paths.secrets(ns), { name, value });
          secrets.push(data);
          show();
          announce(`Secret ${data.name} created.`);
          return data;
        },
      });
    }

    function replaceValue(s) {
      valueDialog({
        title: `Replace the value of ${s.name}`, withName: false, submitLabel: 'Replace value', denied: 'Replacing a value needs secret:update on it.',
        send: async (_, value) => {
          const { data } = await api.patch(api.paths.secret(ns, s.id), { value });
          replace(notice, h('div', { class: 'alert success', role: 'status' }, h('p', {}, `The value of ${s.name} was replaced. Deployed versions keep the old value until they are deployed again.`)));
          return data;
        },
      });
    }

    async function remove(s) {
      const ok = await confirmDialog({ title: `Delete Secret ${s.name}?`, message: 'Its value is removed from the Secret Driver. A Secret still in use cannot be deleted.', confirmLabel: 'Delete Secret', danger: true });
      if (!ok) return;
      replace(notice);
      try {
        await api.del(api.paths.secret(ns, s.id));
        secrets = secrets.filter((x) => x.id !== s.id);
        show();
        replace(detail);
        router.setQuery({ secret: null });
        announce(`Secret ${s.name} deleted.`);
      } catch (err) {
        replace(notice, errorPanel(err, { denied: 'Deleting needs secret:delete on it.', refresh: load }));
        if (err.status === 409) notice.append(h('p', { class: 'hint' }, 'The Secret is still used: the consumers are listed below. Change them first.'));
      }
    }

    load();
  },
};
