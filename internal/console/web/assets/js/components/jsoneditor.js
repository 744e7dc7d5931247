// The Configuration editor: the native JSON document in a text area, checked as it is typed
// (syntax, and that it is an object), and the API's validation details shown at their JSON
// paths with the line they point to.

import { h, uid, replace } from '../dom.js';
import { detailText } from './form.js';

// locate returns the 1-based line of the value a JSON pointer names in text, or 0.
export function locate(text, pointer) {
  const tokens = pointer.split('/').slice(1).map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
  let i = 0;
  const ws = () => { while (i < text.length && ' \t\r\n'.includes(text[i])) i += 1; };
  const skipString = () => {
    const start = i; i += 1;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i += 1;
    return JSON.parse(text.slice(start, i));
  };
  const skipValue = () => {
    ws();
    const c = text[i];
    if (c === '"') { skipString(); return; }
    if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      i += 1; ws();
      while (i < text.length && text[i] !== close) {
        if (c === '{') { skipString(); ws(); i += 1; }
        skipValue(); ws();
        if (text[i] === ',') { i += 1; ws(); }
      }
      i += 1; return;
    }
    while (i < text.length && !',}] \t\r\n'.includes(text[i])) i += 1;
  };
  try {
    for (const token of tokens) {
      ws();
      if (text[i] === '{') {
        i += 1; ws();
        let found = false;
        while (i < text.length && text[i] !== '}') {
          const key = skipString(); ws(); i += 1; ws();
          if (key === token) { found = true; break; }
          skipValue(); ws();
          if (text[i] === ',') { i += 1; ws(); }
        }
        if (!found) return 0;
      } else if (text[i] === '[') {
        i += 1; ws();
        const index = Number(token);
        for (let n = 0; n < index; n += 1) { skipValue(); ws(); if (text[i] === ',') { i += 1; ws(); } }
      } else {
        return 0;
      }
    }
    ws();
    return text.slice(0, i).split('\n').length;
  } catch {
    return 0;
  }
}

// syntaxError describes why text is not a JSON object, or returns ''.
export function syntaxError(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const m = /position (\d+)/.exec(err.message);
    if (m) {
      const before = text.slice(0, Number(m[1]));
      const line = before.split('\n').length;
      const column = before.length - before.lastIndexOf('\n');
      return `Not valid JSON at line ${line}, column ${column}.`;
    }
    return 'Not valid JSON.';
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'The Configuration must be a JSON object.';
  return '';
}

// jsonEditor({label, value, prefix}) → {row, textarea, value(), set(doc), showDetails(details), valid()}.
// prefix is the request pointer of the document (/values): details below it are shown relative.
export function jsonEditor({ label, value = {}, prefix = '/values', hint }) {
  const id = uid('json');
  const status = h('p', { id: `${id}-status`, class: 'json-status', 'aria-live': 'polite' });
  const problems = h('ul', { id: `${id}-problems`, class: 'json-problems' });
  const textarea = h('textarea', {
    id, class: 'code', rows: 14, spellcheck: 'false', autocapitalize: 'off',
    'aria-describedby': `${id}-hint ${id}-status ${id}-problems`,
  });
  textarea.value = JSON.stringify(value, null, 2);
  const check = () => {
    const problem = syntaxError(textarea.value);
    status.textContent = problem || 'Valid JSON object.';
    status.className = problem ? 'json-status invalid' : 'json-status';
    if (problem) textarea.setAttribute('aria-invalid', 'true'); else textarea.removeAttribute('aria-invalid');
    return !problem;
  };
  textarea.addEventListener('input', () => { replace(problems); check(); });
  check();
  const row = h('div', { class: 'field json-editor' },
    h('label', { for: id }, label),
    h('p', { id: `${id}-hint`, class: 'hint' }, hint || 'The native OpenClaw document. The API checks it when you save; problems appear below at their JSON paths.'),
    textarea, status, problems);
  return {
    row, textarea,
    valid: check,
    value: () => JSON.parse(textarea.value),
    set(doc) { textarea.value = JSON.stringify(doc, null, 2); replace(problems); check(); },
    // showDetails lists the details that point into the document; returns the others.
    showDetails(details) {
      const rest = [];
      const items = [];
      for (const d of details || []) {
        if (d.path === prefix || d.path.startsWith(prefix + '/')) {
          const pointer = d.path.slice(prefix.length) || '/';
          const line = pointer === '/' ? 1 : locate(textarea.value, pointer);
          items.push(h('li', {}, h('code', {}, pointer), ` ${detailText(d.code)}`, line ? ` (line ${line})` : ''));
        } else {
          rest.push(d);
        }
      }
      replace(problems, items);
      if (items.length) textarea.setAttribute('aria-invalid', 'true');
      return rest;
    },
  };
}
