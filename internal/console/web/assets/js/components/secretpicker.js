// The Secret picker: find a readable Secret of the Namespace by name or id, or create one with a
// masked value that is sent once and never read back.

import { h, uid, replace, announce } from '../dom.js';
import * as api from '../api.js';
import { formDialog } from './formdialog.js';
import { errorPanel } from './errors.js';
import { field } from './form.js';

// secretPicker({namespaceId, label, suggestedName}) → {row, selected() → id|'', select(id), load()}
export function secretPicker({ namespaceId, label = 'Secret', suggestedName = () => '' }) {
  const searchId = uid('secret-search');
  const selectId = uid('secret-select');
  let secrets = [];
  const search = h('input', { id: searchId, type: 'search', class: 'picker-search', autocomplete: 'off', placeholder: 'Name or id' });
  const select = h('select', { id: selectId, class: 'picker-select', 'aria-describedby': `${selectId}-state` });
  const state = h('p', { id: `${selectId}-state`, class: 'hint' });
  const problem = h('div');
  const create = h('button', { type: 'button', class: 'button secondary', on: { click: () => createSecret() } }, 'Create new Secret…');

  const render = () => {
    const needle = search.value.trim().toLowerCase();
    const current = select.value;
    const matches = secrets.filter((s) => !needle || s.name.toLowerCase().includes(needle) || s.id.toLowerCase().includes(needle));
    replace(select,
      h('option', { value: '' }, matches.length ? 'Choose a Secret' : 'No matching Secret'),
      matches.map((s) => h('option', { value: s.id, selected: s.id === current }, `${s.name} (${s.id})`)));
    state.textContent = `${matches.length} of ${secrets.length} readable Secrets shown.`;
  };
  search.addEventListener('input', render);

  async function load() {
    replace(problem);
    try {
      secrets = await api.list(api.paths.secrets(namespaceId));
    } catch (err) {
      secrets = [];
      replace(problem, errorPanel(err, { denied: 'You cannot list the Secrets of this Namespace (namespace:read and secret:read).', retry: load }));
    }
    render();
  }

  function createSecret() {
    const name = field({ label: 'Name', name: 'name', value: suggestedName(), path: '/name', required: true });
    const value = field({
      label: 'Value', name: 'value', type: 'password', path: '/value', required: true, autocomplete: 'new-password',
      hint: 'Sent once to the Secret Driver; never shown again.',
    });
    formDialog({
      title: 'Create a Secret', fields: [name, value], submitLabel: 'Create Secret',
      denied: 'You cannot create Secrets in this Namespace (secret:create).',
      onUnknown: load,
      send: async () => {
        const { data } = await api.post(api.paths.secrets(namespaceId), { name: name.control.value, value: value.control.value });
        value.control.value = '';
        secrets.push(data);
        search.value = '';
        render();
        select.value = data.id;
        select.dispatchEvent(new Event('change'));
        announce(`Secret ${data.name} created and selected.`);
      },
    });
  }

  const row = h('div', { class: 'field secret-picker' },
    h('label', { for: searchId }, `Find a ${label.toLowerCase()}`),
    search,
    h('label', { for: selectId }, label),
    h('div', { class: 'picker-row' }, select, create),
    state, problem);
  return {
    row, select, load,
    selected: () => select.value,
    selectedSecret: () => secrets.find((s) => s.id === select.value),
    onChange(handler) { select.addEventListener('change', handler); },
  };
}
