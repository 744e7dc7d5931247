// Granting an Agent's own ServicePrincipal `operate` on the Secrets it uses: the step a deploy
// requires (the worker acts as the Agent) and nobody can guess. Done through the Namespace IAM
// API: a Role granting secret:operate (reused, or created once), then one AccessBinding per
// Secret. Each Secret's result is reported on its own, so a partial failure can be retried for
// the rest.

import * as api from '../api.js';

export const SECRET_OPERATOR_ROLE = 'secret-operator';

function isSecretOperator(role) {
  return role.permissions.length === 1 && role.permissions[0].action === 'operate' && role.permissions[0].resourceKind === 'secret';
}

// grantSecretOperate returns [{secretId, ok, error?, bindingId?}]. It never repeats a write: a
// binding that already exists is found by reading first.
export async function grantSecretOperate(namespaceId, servicePrincipalId, secretIds) {
  const roles = await api.list(api.paths.roles(namespaceId));
  let role = roles.find(isSecretOperator);
  if (!role) {
    role = (await api.post(api.paths.roles(namespaceId), {
      name: SECRET_OPERATOR_ROLE, permissions: [{ action: 'operate', resourceKind: 'secret' }],
    })).data;
  }
  const bindings = await api.list(api.paths.bindings(namespaceId));
  const results = [];
  for (const secretId of secretIds) {
    const existing = bindings.find((b) => b.subjectId === servicePrincipalId && b.roleId === role.id && b.resourceKind === 'secret' && b.resourceId === secretId);
    if (existing) { results.push({ secretId, ok: true, bindingId: existing.id }); continue; }
    try {
      const { data } = await api.post(api.paths.bindings(namespaceId), {
        subjectKind: 'identity', subjectId: servicePrincipalId, roleId: role.id, resourceKind: 'secret', resourceId: secretId,
      });
      results.push({ secretId, ok: true, bindingId: data.id });
    } catch (error) {
      results.push({ secretId, ok: false, error });
    }
  }
  return results;
}

// GRANT_EXPLANATION is shown next to the choice.
export const GRANT_EXPLANATION = 'A deployment runs as the Agent\u2019s own ServicePrincipal, which needs operate on every Secret ' +
  'the Agent uses, just as you do. The console grants it through the IAM API (a secret-operator Role and one AccessBinding ' +
  'per Secret). Granting needs installation:administer; without it, ask an administrator.';
