// Package iam is OCC's native IAM driver: the policy model (identities, Roles, AccessBindings,
// Groups, Restrictions), the structural validation of persisted policy, the decision algorithm,
// the identity-coverage rule and the caller-side check of decisions.
//
// The package holds no policy of its own. A decision reads the policy it needs through a
// PolicySource, fresh, and only the rows relevant to the requesting identity, so the cost of one
// decision does not grow with the size of the whole policy. The one exception is a Native made
// WithCache for one request: it reuses decisions made under the policy epoch that request read,
// so a policy change is still effective on the next request on every replica (DecisionCache).
// The SQL behind PolicySource lives in package store.
//
// Everything fails closed: a storage error is returned as an error (never as an allow), a
// structurally invalid policy denies every request, an unknown or ambiguous identity is denied, and
// a caller treats a malformed Decision (see CheckDecision) as a denial.
//
// Decide, ValidateSlice and Covers are pure functions over a PolicySlice; Native wires them to a
// PolicySource.
package iam
