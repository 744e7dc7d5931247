// Building DOM nodes without HTML strings: every text goes through text nodes (textContent), so
// nothing the API answers can ever be interpreted as markup.

const PROPERTIES = new Set(['value', 'checked', 'disabled', 'selected', 'hidden', 'multiple', 'required', 'readOnly']);

// h(tag, attrs, ...children) creates an element. attrs: plain attributes, `class`, `for`,
// `on` ({event: handler}), `dataset`, and the properties above. Children: nodes, strings
// (as text), numbers, arrays, and null/undefined/false (skipped).
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'on') {
      for (const [event, handler] of Object.entries(value)) el.addEventListener(event, handler);
    } else if (key === 'dataset') {
      Object.assign(el.dataset, value);
    } else if (PROPERTIES.has(key)) {
      el[key] = value;
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(parent, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

// replace empties node and appends children.
export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

let counter = 0;
// uid returns a document-unique id for label/aria wiring.
export function uid(prefix = 'occ') {
  counter += 1;
  return `${prefix}-${counter}`;
}

// announce speaks a short message through the shared polite live region.
export function announce(text) {
  const region = document.getElementById('announcer');
  if (!region) return;
  region.textContent = '';
  // A fresh text node makes screen readers repeat an identical message.
  setTimeout(() => { region.textContent = text; }, 20);
}

export function formatTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

export function shortId(id) {
  if (!id) return '—';
  const [prefix, rest] = id.split('_');
  return rest ? `${prefix}_${rest.slice(0, 8)}` : id;
}

// idText shows an id shortened, with the full id as a tooltip and for copying.
export function idText(id) {
  return h('code', { class: 'id', title: id }, shortId(id));
}
