// Access to the selected Namespace: its Roles and AccessBindings, grant and revoke, with
// subjects and resources shown by name where the console can read them. Managing the policy
// needs installation:administer; everyone else gets the reason instead of the tables.

import * as api from '../api.js';
import { h, replace, announce, idText } from '../dom.js';
import * as router from '../router.js';
import { confirmDialog } from '../components/dialog.js';
import { formDialog } from '../components/formdialog.js';
import { errorPanel, isAbort } from '../components/errors.js';
import { field } from '../components/form.js';
import { dataTable } from '../components/table.js';

const DENIED = 'Managing access needs installation:administer (and namespace:read on this Namespace). Ask an administrator.';

const MATRIX = {
  namespace: ['read'],
  agent: ['read', 'update', 'delete', 'deploy', 'operate', 'administer', 'read_logs', 'use', 'create'],
  agent_revision: ['read'],
  configuration: ['read', 'update', 'delete', 'create'],
  secret: ['read', 'update', 'delete', 'operate', 'create'],
  service_account: ['read', 'update', 'delete', 'create'],
};

export default {
  title: 'Access',
  namespaced: true,
  render(ctx) {
    const ns = ctx.namespaceId;
    const notice = h('div');
    const rolesRegion = h('section', { 'aria-labelledby': 'roles-title' });
    const bindingsRegion = h('section', { 'aria-labelledby': 'bindings-title' });
    replace(ctx.main,
      h('div', { class: 'page-header' }, h('h1', {}, 'Access'),
        h('div', { class: 'page-actions' },
          h('button', { type: 'button', class: 'button', on: { click: () => grant() } }, 'Grant access'),
          h('button', { type: 'button', class: 'button secondary', on: { click: () => createRole() } }, 'Create Role'))),
      h('p', { class: 'lead' }, `Roles and AccessBindings of Namespace ${ctx.namespace.name}. A binding gives one identity a Role on one exact resource.`),
      notice, bindingsRegion, rolesRegion);
    const data = { roles: [], bindings: [], agents: [], secrets: [], serviceAccounts: [], principals: [] };

    const subjectName = (id) => {
      const agent = data.agents.find((a) => a.servicePrincipalId === id);
      if (agent) return h('span', {}, 'Agent ', h('a', { href: router.href(`/console/agents/${agent.id}`) }, agent.name), ' ', idText(id));
      if (id.startsWith('prn_')) return h('span', {}, 'Person ', idText(id));
      if (data.principals.some((p) => p.id === id)) return h('span', {}, 'ServicePrincipal ', idText(id));
      return idText(id);
    };
    const resourceName = (kind, id) => {
      if (!kind) return h('span', { class: 'hint' }, 'every resource (broad)');
      if (kind === 'namespace' && id === ns) return `Namespace ${ctx.namespace.name}`;
      const agent = kind === 'agent' && data.agents.find((a) => a.id === id);
      if (agent) return h('span', {}, 'Agent ', h('a', { href: router.href(`/console/agents/${id}`) }, agent.name));
      const secret = kind === 'secret' && data.secrets.find((s) => s.id === id);
      if (secret) return h('span', {}, 'Secret ', h('a', { href: router.href('/console/secrets', { secret: id }) }, secret.name));
      return h('span', {}, `${kind} `, idText(id));
    };
    const roleName = (id) => {
      const r = data.roles.find((x) => x.id === id);
      return r ? (r.name || idText(r.id)) : idText(id);
    };
    const perms = (r) => r.permissions.map((p) => `${p.resourceKind}:${p.action}`).join(', ');

    const show = () => {
      replace(bindingsRegion, h('h2', { id: 'bindings-title' }, 'AccessBindings'), dataTable({
        caption: 'AccessBindings', rows: data.bindings, rowKey: (b) => b.id, empty: 'No binding in this Namespace.',
        columns: [
          { label: 'Subject', cell: (b) => (b.subjectKind === 'group' ? ['Group ', idText(b.subjectId)] : subjectName(b.subjectId)) },
          { label: 'Role', cell: (b) => roleName(b.roleId) },
          { label: 'Resource', cell: (b) => resourceName(b.resourceKind, b.resourceId) },
          { label: 'Actions', className: 'actions', cell: (b) => h('button', { type: 'button', class: 'button danger small', 'aria-label': `Revoke binding ${b.id}`, on: { click: () => revoke(b) } }, 'Revoke') },
        ],
      }));
      replace(rolesRegion, h('h2', { id: 'roles-title' }, 'Roles'), dataTable({
        caption: 'Roles', rows: data.roles, rowKey: (r) => r.id, empty: 'No Role in this Namespace.',
        columns: [
          { label: 'Name', cell: (r) => r.name || idText(r.id) },
          { label: 'Permissions', cell: (r) => perms(r) },
          { label: 'Actions', className: 'actions', cell: (r) => h('button', { type: 'button', class: 'button danger small', 'aria-label': `Delete Role ${r.name || r.id}`, on: { click: () => deleteRole(r) } }, 'Delete') },
        ],
      }));
    };

    const load = async () => {
      replace(notice);
      try {
        const [roles, bindings, principals] = await Promise.all([
          api.list(api.paths.roles(ns), { signal: ctx.signal }),
          api.list(api.paths.bindings(ns), { signal: ctx.signal }),
          api.list(api.paths.servicePrincipals(ns), { signal: ctx.signal }),
        ]);
        Object.assign(data, { roles, bindings, principals });
      } catch (err) {
        if (isAbort(err)) return;
        replace(bindingsRegion);
        replace(rolesRegion);
        replace(notice, errorPanel(err, { denied: DENIED, retry: load }));
        return;
      }
      const quiet = (p) => api.list(p, { signal: ctx.signal }).catch(() => []);
      [data.agents, data.secrets, data.serviceAccounts] = await Promise.all([quiet(api.paths.agents(ns)), quiet(api.paths.secrets(ns)), quiet(api.paths.serviceAccounts(ns))]);
      show();
      if (ctx.query.get('subject')) { const s = ctx.query.get('subject'); router.setQuery({ subject: null }); grant(s); }
    };

    function resourceOptions(kind) {
      switch (kind) {
        case 'namespace': return [{ value: ns, label: `Namespace ${ctx.namespace.name}` }];
        case 'agent': return data.agents.map((a) => ({ value: a.id, label: a.name }));
        case 'secret': return data.secrets.map((s) => ({ value: s.id, label: s.name }));
        case 'service_account': return data.serviceAccounts.map((s) => ({ value: s.id, label: s.name }));
        case 'configuration': return [...new Set(data.agents.map((a) => a.configurationId))].map((id) => ({ value: id, label: `${id} (${data.agents.filter((a) => a.configurationId === id).map((a) => a.name).join(', ')})` }));
        default: return [];
      }
    }

    function grant(subjectPreset = '') {
      const subjectOptions = [{ value: '', label: 'A person (enter the Principal id below)' },
        ...data.agents.map((a) => ({ value: a.servicePrincipalId, label: `Agent ${a.name}` })),
        ...data.principals.map((p) => ({ value: p.id, label: `ServicePrincipal ${p.id}` }))];
      const subject = field({ label: 'Subject', name: 'subject', kind: 'select', options: subjectOptions, path: '/subjectId' });
      const person = field({ label: 'Person\u2019s Principal id', name: 'principal', value: subjectPreset, hint: 'prn_… — shown when the account is created on the People page.', attrs: { autocomplete: 'off' } });
      const role = field({ label: 'Role', name: 'role', kind: 'select', path: '/roleId', options: data.roles.map((r) => ({ value: r.id, label: `${r.name || r.id} (${perms(r)})` })) });
      const kind = field({ label: 'Resource kind', name: 'resourceKind', kind: 'select', path: '/resourceKind', value: 'namespace',
        options: Object.keys(MATRIX).filter((k) => k !== 'agent_revision').map((k) => ({ value: k, label: k })) });
      const resource = field({ label: 'Resource', name: 'resourceId', kind: 'select', path: '/resourceId', options: resourceOptions('namespace') });
      const syncSubject = () => { person.row.hidden = subject.control.value !== ''; };
      subject.control.addEventListener('change', syncSubject);
      syncSubject();
      kind.control.addEventListener('change', () => replace(resource.control, resourceOptions(kind.control.value).map((o) => h('option', { value: o.value }, o.label))));
      formDialog({
        title: 'Grant access', fields: [subject, person, role, kind, resource], submitLabel: 'Grant',
        denied: `${DENIED} Granting also needs read on the resource.`, onUnknown: load,
        send: async () => {
          const { data: b } = await api.post(api.paths.bindings(ns), {
            subjectKind: 'identity', subjectId: subject.control.value || person.control.value.trim(),
            roleId: role.control.value, resourceKind: kind.control.value, resourceId: resource.control.value,
          });
          data.bindings.push(b);
          show();
          announce('Access granted.');
        },
      });
    }

    function createRole() {
      const name = field({ label: 'Name', name: 'name', path: '/name' });
      const boxes = [];
      const groups = Object.entries(MATRIX).map(([kind, actions]) => h('fieldset', { class: 'permission-group' }, h('legend', {}, kind),
        actions.map((action) => {
          const box = h('input', { type: 'checkbox', id: `perm-${kind}-${action}`, value: `${kind}:${action}` });
          boxes.push(box);
          return h('span', { class: 'checkbox-line' }, box, h('label', { for: box.id }, action));
        })));
      formDialog({
        title: 'Create a Role', fields: [name], wide: true, submitLabel: 'Create Role', denied: DENIED, onUnknown: load,
        extra: [h('p', { class: 'hint' }, 'Roles are immutable. A Role with create cannot be bound to one exact resource.'), groups],
        send: async () => {
          const permissions = boxes.filter((b) => b.checked).map((b) => { const [resourceKind, action] = b.value.split(':'); return { action, resourceKind }; });
          const body = { permissions };
          if (name.control.value.trim()) body.name = name.control.value;
          const { data: r } = await api.post(api.paths.roles(ns), body);
          data.roles.push(r);
          show();
          announce(`Role ${r.name || r.id} created.`);
        },
      });
    }

    async function revoke(b) {
      if (!(await confirmDialog({ title: 'Revoke this binding?', message: 'The subject loses the Role on that resource at once.', confirmLabel: 'Revoke', danger: true }))) return;
      try {
        await api.del(api.paths.binding(ns, b.id));
        data.bindings = data.bindings.filter((x) => x.id !== b.id);
        show();
        announce('Binding revoked.');
      } catch (err) {
        replace(notice, errorPanel(err, { denied: DENIED, refresh: load }));
      }
    }

    async function deleteRole(r) {
      if (!(await confirmDialog({ title: `Delete Role ${r.name || r.id}?`, message: 'A Role still used by a binding cannot be deleted.', confirmLabel: 'Delete Role', danger: true }))) return;
      try {
        await api.del(api.paths.role(ns, r.id));
        data.roles = data.roles.filter((x) => x.id !== r.id);
        show();
        announce('Role deleted.');
      } catch (err) {
        replace(notice, errorPanel(err, { denied: DENIED, refresh: load }));
      }
    }

    load();
  },
};
