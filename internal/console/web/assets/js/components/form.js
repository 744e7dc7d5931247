// Form fields with their labels, hints and error messages wired for assistive technology, and
// the mapping of the API's validation details ({path, code}) to the fields they name.

import { h, uid } from '../dom.js';

const DETAIL_TEXT = {
  REQUIRED: 'is required',
  UNKNOWN_FIELD: 'is not accepted',
  INVALID_TYPE: 'has the wrong type',
  INVALID_FORMAT: 'has an invalid format',
  INVALID_VALUE: 'is not an accepted value',
  TOO_LONG: 'is too long',
  TOO_DEEP: 'is nested too deeply',
};

export function detailText(code) { return DETAIL_TEXT[code] || code; }

// field builds a labelled control. kind: input (default), select, textarea. path: the JSON
// pointer of the request member it fills, for mapping API details back to it.
export function field({ label, name, kind = 'input', type = 'text', value = '', hint, path, options = [], required = false, autocomplete, attrs = {} }) {
  const id = uid(name || 'field');
  const hintId = hint ? `${id}-hint` : null;
  const errorId = `${id}-error`;
  const common = { id, name, required, 'aria-describedby': [hintId, errorId].filter(Boolean).join(' '), ...attrs };
  let control;
  if (kind === 'select') {
    control = h('select', common, options.map((o) => h('option', { value: o.value, selected: o.value === value }, o.label)));
  } else if (kind === 'textarea') {
    control = h('textarea', { ...common, spellcheck: 'false' });
    control.value = value;
  } else {
    control = h('input', { ...common, type, value, autocomplete });
  }
  const error = h('p', { id: errorId, class: 'field-error', hidden: true });
  const row = h('div', { class: 'field', dataset: path ? { path } : {} },
    h('label', { for: id }, label, required ? h('span', { class: 'required', 'aria-hidden': 'true' }, ' *') : null),
    hint ? h('p', { id: hintId, class: 'hint' }, hint) : null,
    control, error);
  return {
    row, control,
    setError(text) {
      error.textContent = text || '';
      error.hidden = !text;
      if (text) control.setAttribute('aria-invalid', 'true'); else control.removeAttribute('aria-invalid');
    },
  };
}

// showDetails puts each API detail on the field whose path it starts with; details that match
// no field are returned for a summary.
export function showDetails(fields, details) {
  const rest = [];
  for (const f of fields) f.setError('');
  for (const d of details || []) {
    const target = fields.find((f) => f.row.dataset.path && (d.path === f.row.dataset.path || d.path.startsWith(f.row.dataset.path + '/')));
    if (target) target.setError(`${target.row.querySelector('label').firstChild.textContent} ${detailText(d.code)}.`);
    else rest.push(d);
  }
  return rest;
}

// submitButton is a primary button that shows progress while a write is in flight.
export function submitButton(label) {
  return h('button', { type: 'submit', class: 'button' }, label);
}
