// Status badges: a word and a colour class; the word alone carries the meaning.

import { h } from '../dom.js';

const TONES = {
  ready: 'good', succeeded: 'good', running: 'info', active: 'good',
  provisioning: 'info', queued: 'info', deleting: 'warn', stopped: 'muted',
  failed: 'bad', unknown: 'muted',
};

export function badge(status, label) {
  return h('span', { class: `badge ${TONES[status] || 'muted'}` }, label || status || 'unknown');
}
