// Modal dialogs on the native <dialog> element: focus moves into the dialog and returns to the
// control that opened it, Escape closes the topmost one (unless it is busy with a write), and
// the rest of the page is inert while it is open.

import { h, uid } from '../dom.js';

// openDialog shows a dialog. body: nodes; actions: buttons (a Cancel button is added).
// Returns {element, body, close(), setBusy(bool), closed (a Promise)}.
export function openDialog({ title, body = [], actions = [], cancelLabel = 'Cancel', wide = false }) {
  const opener = document.activeElement;
  const titleId = uid('dialog-title');
  let busy = false;
  let resolveClosed;
  const closed = new Promise((resolve) => { resolveClosed = resolve; });
  const cancel = h('button', { type: 'button', class: 'button secondary', on: { click: () => close() } }, cancelLabel);
  const content = h('div', { class: 'dialog-body' }, body);
  const dialog = h('dialog', { class: wide ? 'dialog wide' : 'dialog', 'aria-labelledby': titleId },
    h('h2', { id: titleId, class: 'dialog-title' }, title),
    content,
    h('div', { class: 'dialog-actions' }, actions, cancel));
  dialog.addEventListener('cancel', (event) => {
    // Escape: a dialog in the middle of a write stays open until the answer arrives.
    if (busy) event.preventDefault();
  });
  dialog.addEventListener('close', () => {
    dialog.remove();
    if (opener && opener.isConnected && typeof opener.focus === 'function') opener.focus();
    resolveClosed();
  });
  document.body.append(dialog);
  dialog.showModal();
  const first = dialog.querySelector('[autofocus], input:not([type=hidden]), select, textarea');
  if (first) first.focus();

  function close() {
    if (busy) return;
    if (dialog.open) dialog.close();
  }
  return {
    element: dialog, body: content, cancel, close, closed,
    setBusy(value) {
      busy = value;
      cancel.disabled = value;
      for (const b of actions) if (b instanceof HTMLButtonElement) b.disabled = value;
    },
  };
}

// confirm asks a yes/no question; resolves true when the person confirms.
export function confirmDialog({ title, message, confirmLabel, danger = false }) {
  return new Promise((resolve) => {
    let confirmed = false;
    const yes = h('button', {
      type: 'button', class: danger ? 'button danger' : 'button',
      on: { click: () => { confirmed = true; d.close(); } },
    }, confirmLabel);
    const d = openDialog({ title, body: [message].flat().map((m) => (typeof m === 'string' ? h('p', {}, m) : m)), actions: [yes] });
    d.closed.then(() => resolve(confirmed));
  });
}

// closeAllDialogs removes every open dialog at once (sign-out, an expired session).
export function closeAllDialogs() {
  for (const d of document.querySelectorAll('dialog')) d.remove();
}
