// Package obs writes OCC's process logs: one JSON object per line through log/slog,
// with a field allowlist and value rules that keep credentials, provider payloads and
// raw error text out of every line.
//
// A log line is a public interface that operators grep, so callers name the event with
// the slog message and add only allowlisted fields:
//
//	logger := obs.NewLogger(os.Stdout, "occ-worker", slog.LevelInfo)
//	logger.Info("worker.completed", "workId", key, "attempt", 2, "outcome", "success")
//
// produces
//
//	{"time":"2026-11-30T08:40:59.123Z","severity":"INFO","service":"occ-worker","event":"worker.completed","attempt":2,"outcome":"success","workId":"..."}
//
// The severity comes from the event name, never from the slog call level (see
// [Severity]); the handler's level filters on that derived severity. Fields are
// written after the four fixed keys in ascending key order. Anything that does not
// pass the rules is dropped silently: an unknown key, a value of the wrong shape, a
// string outside the safe alphabet or one that looks like a credential, any error
// value.
//
// Groups: attributes inside a named group (slog.Group("g", ...) or anything logged
// after WithGroup("g")) are dropped, because the allowlist names top-level fields
// only. Groups with an empty name are inlined, as slog's handler contract asks.
//
// Duplicate keys: the attribute seen last wins (record attributes come after those
// added with With); if the last value is invalid the field is dropped, never replaced
// by an older value.
//
// [LooksLikeSecret] is the single credential expression shared with startup YAML
// validation and audit redaction; [ScrubSecrets] replaces credential-looking spans
// inside free text (used by package audit).
package obs
