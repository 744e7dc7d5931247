// Tabs kept in the URL (?tab=), so Back and Forward restore the selected one. Arrow keys move
// between tabs, as the WAI-ARIA tabs pattern describes. A page adds a tab by adding an entry.

import { h, uid, replace } from '../dom.js';
import * as router from '../router.js';

// tabs({tabs: [{id, label, render(panel)}], selected}) → element.
export function tabView({ tabs, selected, label }) {
  const base = uid('tab');
  const panel = h('div', { class: 'tab-panel', role: 'tabpanel', tabindex: '0' });
  const buttons = tabs.map((t) => h('button', {
    type: 'button', role: 'tab', id: `${base}-${t.id}`, class: 'tab',
    'aria-controls': `${base}-panel`, dataset: { tab: t.id },
  }, t.label));
  panel.id = `${base}-panel`;
  const list = h('div', { class: 'tab-list', role: 'tablist', 'aria-label': label }, buttons);
  const show = (id, { push } = {}) => {
    const current = tabs.find((t) => t.id === id) || tabs[0];
    for (const b of buttons) {
      const on = b.dataset.tab === current.id;
      b.setAttribute('aria-selected', String(on));
      b.tabIndex = on ? 0 : -1;
    }
    panel.setAttribute('aria-labelledby', `${base}-${current.id}`);
    replace(panel);
    current.render(panel);
    if (push) router.setQuery({ tab: current.id === tabs[0].id ? null : current.id }, { replace: false });
  };
  buttons.forEach((b, i) => {
    b.addEventListener('click', () => show(b.dataset.tab, { push: true }));
    b.addEventListener('keydown', (e) => {
      const move = { ArrowRight: 1, ArrowLeft: -1, Home: -i, End: buttons.length - 1 - i }[e.key];
      if (move === undefined) return;
      e.preventDefault();
      const next = buttons[(i + move + buttons.length) % buttons.length];
      next.focus();
      show(next.dataset.tab, { push: true });
    });
  });
  show(selected);
  return h('div', { class: 'tabs' }, list, panel);
}
