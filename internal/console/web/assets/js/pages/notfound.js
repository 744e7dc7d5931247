// Unknown console paths.

import { h, replace } from '../dom.js';
import * as router from '../router.js';

export default {
  title: 'Not found',
  namespaced: false,
  render(ctx) {
    replace(ctx.main, h('h1', {}, 'Page not found'),
      h('p', {}, 'The console has no page at this address.'),
      h('p', {}, h('a', { href: router.href('/console/agents') }, 'Go to the Agents')));
  },
};
