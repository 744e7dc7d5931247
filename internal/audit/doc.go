// Package audit is OCC's audit evidence model: the Event a change or a denial is
// recorded as, the redaction applied before anything is persisted, and the Appender
// that writes one row to occ.audit_events inside the caller's transaction, so the
// change and its evidence commit or roll back together.
//
// The table has no column for the Installation (it is a singleton) nor for the
// optional envelope fields; Append packs schemaVersion, source, requestId,
// admissionDecisionId, actor, iamDriverId, authorization, decisionReason and
// reasonCode into details.__occAuditMetadata, and Decode unpacks them again.
// Callers may not use that key themselves.
//
// Details hold non-secret identifiers only. Redact is nevertheless applied to every
// details object before it is stored: it replaces the values of credential- and
// content-like keys, scrubs credential patterns out of strings (with the expression
// shared with package obs), and bounds depth. See Redact for the exact rules.
package audit
