// Data tables: a caption, header cells, and one row per item. Below 700 px wide the rows become
// cards; each cell carries its column label for that layout.

import { h } from '../dom.js';

// dataTable({caption, columns: [{label, cell(item) → node|string, className}], rows, empty, rowKey})
export function dataTable({ caption, columns, rows, empty = 'Nothing here yet.', rowKey }) {
  if (!rows.length) return h('p', { class: 'empty' }, empty);
  const head = h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', class: c.className }, c.label))));
  const body = h('tbody');
  const fragment = document.createDocumentFragment();
  for (const item of rows) {
    const tr = h('tr', rowKey ? { dataset: { key: rowKey(item) } } : {});
    for (const c of columns) {
      const value = c.cell(item);
      tr.append(h('td', { class: c.className, dataset: { label: c.label } }, value === undefined || value === null || value === '' ? '—' : value));
    }
    fragment.append(tr);
  }
  body.append(fragment);
  return h('div', { class: 'table-wrap' },
    h('table', { class: 'data-table' }, caption ? h('caption', { class: 'visually-hidden' }, caption) : null, head, body));
}

// definitionList renders label/value pairs.
export function definitionList(pairs) {
  return h('dl', { class: 'facts' }, pairs.filter(Boolean).map(([label, value]) => [
    h('dt', {}, label), h('dd', {}, value === undefined || value === null || value === '' ? '—' : value)]));
}
