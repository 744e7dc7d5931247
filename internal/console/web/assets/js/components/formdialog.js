// A dialog holding a form whose submission makes one write: the failure is shown in the dialog
// (validation details beside their fields), a known refusal can be corrected and sent again,
// and after an unknown outcome the form is blocked and offers Refresh instead.

import { h, replace } from '../dom.js';
import { openDialog } from './dialog.js';
import { errorPanel } from './errors.js';
import { showDetails } from './form.js';

// formDialog({title, fields, extra, submitLabel, send, denied, onUnknown, wide}): fields are
// form.js fields (shown first, in order); extra are more nodes; send() performs the write and
// throws an ApiError on failure; onUnknown re-reads the page's state (Refresh).
export function formDialog({ title, fields = [], extra = [], submitLabel, send, denied, onUnknown, wide = false }) {
  const failure = h('div');
  const save = h('button', { type: 'button', class: 'button' }, submitLabel);
  const form = h('form', { class: 'form', novalidate: true }, fields.map((f) => f.row), extra, failure);
  const d = openDialog({ title, body: [form], actions: [save], wide });
  let uncertain = false;
  const submit = async (event) => {
    event.preventDefault();
    if (uncertain) return;
    d.setBusy(true);
    replace(failure);
    try {
      await send();
      d.setBusy(false);
      d.close();
    } catch (err) {
      d.setBusy(false);
      if (err.unknownOutcome) {
        // The write may have happened: sending it again could do it twice.
        uncertain = true;
        save.disabled = true;
      }
      const rest = showDetails(fields, err.details);
      replace(failure, errorPanel(err, {
        details: rest, denied,
        refresh: err.unknownOutcome && onUnknown ? () => { d.close(); onUnknown(); } : undefined,
      }));
    }
  };
  form.addEventListener('submit', submit);
  save.addEventListener('click', submit);
  return d;
}
