// Create an Agent: name, execution mode, a Configuration (native JSON, empty or copied from
// another Agent), Harness authentication with a Secret picker, and the grant the Agent's own
// ServicePrincipal needs. Three writes in order — Configuration, Agent, grant — each reported
// on its own; a failed step is retried by hand, never automatically, and a finished step is not
// repeated.

import * as api from '../api.js';
import { h, replace, announce, idText } from '../dom.js';
import * as router from '../router.js';
import { errorPanel } from '../components/errors.js';
import { field, showDetails } from '../components/form.js';
import { jsonEditor } from '../components/jsoneditor.js';
import { secretPicker } from '../components/secretpicker.js';
import { grantSecretOperate, GRANT_EXPLANATION } from '../components/grants.js';

const METHODS = {
  embedded: [
    { value: 'api_key', label: 'Model API key (a Secret)' },
    { value: 'runtime', label: 'Provided by the runtime (no Secret)' },
  ],
  dedicated: [
    { value: 'api_key', label: 'Model API key (a Secret)' },
    { value: 'codex_pat', label: 'Codex personal access token (a Secret)' },
    { value: 'runtime', label: 'Provided by the runtime (no Secret)' },
  ],
};

export default {
  title: 'Create Agent',
  namespaced: true,
  render(ctx) {
    const ns = ctx.namespaceId;
    const name = field({ label: 'Name', name: 'name', path: '/name', required: true, hint: 'Unique in the Namespace; 1 to 200 characters.' });
    const mode = field({
      label: 'Execution mode', name: 'executionMode', kind: 'select', path: '/executionMode', value: 'embedded',
      hint: 'Fixed once the Agent exists.',
      options: [{ value: 'embedded', label: 'Embedded OpenClaw' }, { value: 'dedicated', label: 'Dedicated Codex' }],
    });
    const start = field({ label: 'Start from', name: 'startFrom', kind: 'select', options: [{ value: '', label: 'An empty document' }],
      hint: 'Copy the Configuration of another Agent of this Namespace, including its Secret bindings.' });
    const editor = jsonEditor({ label: 'Configuration', value: {} });
    const bindingsNote = h('div', { class: 'hint' });
    const method = field({ label: 'Harness authentication', name: 'method', kind: 'select', path: '/harnessAuth', value: 'api_key', options: METHODS.embedded });
    const picker = secretPicker({ namespaceId: ns, label: 'Secret', suggestedName: () => `${name.control.value || 'agent'}-model-key` });
    const grant = h('input', { type: 'checkbox', id: 'grant-secret-operate', checked: true });
    const grantRow = h('div', { class: 'field checkbox' },
      h('div', { class: 'checkbox-line' }, grant, h('label', { for: 'grant-secret-operate' }, 'Grant the Agent operate on the Secrets it uses')),
      h('p', { class: 'hint', id: 'grant-explained' }, GRANT_EXPLANATION));
    grant.setAttribute('aria-describedby', 'grant-explained');
    const steps = h('ol', { class: 'steps', 'aria-live': 'polite' });
    const failure = h('div');
    const submit = h('button', { type: 'submit', class: 'button' }, 'Create Agent');
    const form = h('form', { class: 'form', novalidate: true },
      h('fieldset', {}, h('legend', {}, 'Agent'), name.row, mode.row),
      h('fieldset', {}, h('legend', {}, 'Configuration'), start.row, editor.row, bindingsNote),
      h('fieldset', {}, h('legend', {}, 'Harness authentication'), method.row, picker.row, grantRow),
      steps, failure,
      h('div', { class: 'form-actions' }, submit, h('a', { class: 'button secondary', href: router.href('/console/agents') }, 'Cancel')));
    replace(ctx.main, h('h1', {}, 'Create an Agent'),
      h('p', { class: 'lead' }, `In Namespace ${ctx.namespace.name}. The Agent starts stopped; deploy it from its page.`), form);

    let bindings = {};
    let savedConfiguration = null;
    let agent = null;
    let blocked = false; // an unknown outcome: no further write until the person refreshes

    const syncMethod = () => {
      const current = method.control.value;
      replace(method.control, METHODS[mode.control.value].map((o) => h('option', { value: o.value, selected: o.value === current }, o.label)));
      const needsSecret = method.control.value !== 'runtime';
      picker.row.hidden = !needsSecret;
    };
    mode.control.addEventListener('change', syncMethod);
    method.control.addEventListener('change', syncMethod);
    syncMethod();
    picker.load();

    const secretIds = () => {
      const ids = new Set(Object.values(bindings).map((b) => b.source.id));
      if (method.control.value !== 'runtime' && picker.selected()) ids.add(picker.selected());
      return [...ids];
    };
    const showBindings = () => {
      const names = Object.keys(bindings);
      replace(bindingsNote, names.length ? ['Secret bindings copied: ', names.map((n, i) => [i ? ', ' : '', h('code', {}, n)])] : '');
    };

    // Agents to copy from.
    api.list(api.paths.agents(ns), { signal: ctx.signal }).then((agents) => {
      for (const a of agents) start.control.append(h('option', { value: a.id }, a.name));
    }).catch(() => {});
    start.control.addEventListener('change', async () => {
      if (!start.control.value) { editor.set({}); bindings = {}; showBindings(); return; }
      replace(failure);
      try {
        const source = await api.get(api.paths.agent(ns, start.control.value), { signal: ctx.signal });
        const cfg = await api.get(api.paths.configuration(ns, source.configurationId), { signal: ctx.signal });
        editor.set(cfg.values || {});
        bindings = cfg.secretBindings || {};
        showBindings();
        announce(`Configuration of ${source.name} copied.`);
      } catch (err) {
        replace(failure, errorPanel(err, { denied: 'Reading that Agent\u2019s Configuration needs configuration:read on it.' }));
      }
    });

    const step = (label, status, extra) => h('li', { class: `step ${status}` }, h('span', { class: 'step-status' }, status), ' ', label, extra ? [' ', extra] : null);

    const freeze = () => {
      editor.textarea.readOnly = true;
      start.control.disabled = true;
      mode.control.disabled = true;
    };

    async function runGrant() {
      const ids = secretIds();
      replace(failure);
      if (!ids.length) return true;
      let results;
      try {
        results = await grantSecretOperate(ns, agent.servicePrincipalId, ids);
      } catch (err) {
        results = ids.map((secretId) => ({ secretId, ok: false, error: err }));
      }
      const failed = results.filter((r) => !r.ok);
      steps.lastChild.replaceWith(step('Access granted to the Agent\u2019s ServicePrincipal', failed.length ? 'failed' : 'done',
        failed.length ? `${results.length - failed.length} of ${results.length} Secrets` : null));
      if (!failed.length) return true;
      const retry = h('button', { type: 'button', class: 'button', on: { click: () => { retry.disabled = true; runGrant().then((ok) => ok && finish()); } } }, 'Retry access grant');
      replace(failure, h('div', { class: 'alert warning', role: 'alert' },
        h('p', { class: 'alert-lead' }, `The Agent ${agent.name} was created, but access to ${failed.length} Secret(s) was not granted.`),
        h('p', {}, 'A deploy will be refused until the Agent may operate every Secret it uses. Retry, or ask an administrator to grant it.'),
        failed.map((f) => errorPanel(f.error, { title: `Secret ${f.secretId}`, denied: 'Granting access needs installation:administer.' })),
        h('div', { class: 'alert-actions' }, retry, h('a', { class: 'button secondary', href: router.href(`/console/agents/${agent.id}`) }, 'Open the Agent anyway'))));
      return false;
    }

    function finish() {
      announce(`Agent ${agent.name} created.`);
      router.navigate(router.href(`/console/agents/${agent.id}`, { created: '1' }));
    }

    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      if (blocked) return;
      replace(failure);
      for (const f of [name, mode, method]) f.setError('');
      if (!savedConfiguration && !editor.valid()) { editor.textarea.focus(); return; }
      const needsSecret = method.control.value !== 'runtime';
      if (needsSecret && !picker.selected()) {
        method.setError('Choose a Secret, or create one.');
        picker.select.focus();
        return;
      }
      submit.disabled = true;
      replace(steps);
      try {
        // 1. The Configuration (once).
        if (!savedConfiguration) {
          steps.append(step('Configuration saved', 'pending'));
          const body = { kind: 'agent', values: editor.value() };
          if (Object.keys(bindings).length) body.secretBindings = bindings;
          try {
            savedConfiguration = (await api.post(api.paths.configurations(ns), body)).data;
          } catch (err) {
            steps.lastChild.replaceWith(step('Configuration saved', err.unknownOutcome ? 'unknown' : 'failed'));
            throw err;
          }
          freeze();
        }
        replace(steps, step('Configuration saved', 'done', idText(savedConfiguration.id)));
        // 2. The Agent.
        steps.append(step('Agent created', 'pending'));
        const body = { name: name.control.value, configurationId: savedConfiguration.id, executionMode: mode.control.value };
        body.harnessAuth = needsSecret
          ? { method: method.control.value, source: { kind: 'secret', namespaceId: ns, id: picker.selected() } }
          : { method: 'runtime' };
        try {
          agent = (await api.post(api.paths.agents(ns), body)).data;
        } catch (err) {
          steps.lastChild.replaceWith(step('Agent created', err.unknownOutcome ? 'unknown' : 'failed'));
          throw err;
        }
        steps.lastChild.replaceWith(step('Agent created', 'done', idText(agent.id)));
        name.control.readOnly = true;
        method.control.disabled = true;
        // 3. The grant.
        if (grant.checked && secretIds().length) {
          steps.append(step('Access granted to the Agent\u2019s ServicePrincipal', 'pending'));
          if (!(await runGrant())) return;
        }
        finish();
      } catch (err) {
        submit.disabled = false;
        if (err.unknownOutcome) {
          blocked = true;
          submit.disabled = true;
        }
        let rest = showDetails([name, mode, method], err.details);
        rest = editor.showDetails(rest);
        replace(failure, errorPanel(err, {
          details: rest,
          denied: savedConfiguration ? 'Creating Agents needs agent:create here, configuration:read on the Configuration and secret:operate on its Secret.'
            : 'Saving the Configuration needs configuration:create here and secret:operate on every bound Secret.',
          refresh: err.unknownOutcome ? () => router.navigate(router.href('/console/agents')) : undefined,
        }));
        if (savedConfiguration && !agent) {
          failure.append(h('p', { class: 'hint' }, 'The Configuration is saved and kept; correct the form and create the Agent again.'));
        }
      }
    });
  },
};
