package store

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The storage errors callers react to. PostgreSQL reports a refusal as a SQLSTATE and a constraint
// name; this file is the only place that reads them. A function whose refusals a caller answers in
// its own words says so in its comment and returns them classified: errors.Is(err, ErrDuplicate)
// for any unique violation, RefusedBy(err, c) for one named constraint. The PostgreSQL error stays
// wrapped underneath for logs.

var (
	// ErrDuplicate: a unique constraint or index refused the write.
	ErrDuplicate = errors.New("store: duplicate")
	// ErrForeignKey: a foreign key refused the write (a row still references the one deleted, or
	// the one referenced does not exist).
	ErrForeignKey = errors.New("store: foreign key violation")
	// ErrCheck: a check constraint refused the row.
	ErrCheck = errors.New("store: check constraint violation")
	// ErrRetryableRace: the statement lost a race with a concurrent transaction (a serialization
	// failure, a deadlock, or a race the function names) and changed nothing; running it again may
	// succeed.
	ErrRetryableRace = errors.New("store: lost a race with a concurrent transaction")
)

// Constraint names a database constraint (or unique index) that callers tell apart from others of
// the same kind.
type Constraint string

const (
	// ConstraintExistingNamespaceLive: an existing cluster namespace is adopted by at most one live
	// Namespace.
	ConstraintExistingNamespaceLive Constraint = "namespaces_existing_namespace_live"
	// ConstraintWorkResultValid: a work row's result data has a shape its state and code allow.
	ConstraintWorkResultValid Constraint = "controller_work_result_valid"
	// ConstraintIdenticalBinding: an AccessBinding (subject, Role, target, scope) is stored once.
	ConstraintIdenticalBinding Constraint = "iam_access_bindings_identical"
	// ConstraintOneRuntimeRole: a person holds at most one runtime role per Agent.
	ConstraintOneRuntimeRole Constraint = "iam_access_bindings_one_runtime_role"
	// ConstraintBindingRole: an AccessBinding's Role exists (a Role deleted concurrently refuses
	// the binding, and a bound Role refuses its deletion).
	ConstraintBindingRole Constraint = "iam_access_bindings_role_id_fkey"
	// ConstraintBindingIdentity: an AccessBinding's identity subject exists.
	ConstraintBindingIdentity Constraint = "iam_access_bindings_identity_subject_id_fkey"
	// constraintOneClaimPerResource: at most one work row per lane (Agent, else Namespace) is
	// claimed at a time.
	constraintOneClaimPerResource Constraint = "controller_work_one_claim_per_resource"
)

// SQLSTATE classes and codes this package classifies.
const (
	codeUniqueViolation      = "23505"
	codeForeignKeyViolation  = "23503"
	codeCheckViolation       = "23514"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeDuplicateObject      = "42710"
)

// ConstraintError is a write refused by a constraint: Kind is ErrDuplicate, ErrForeignKey or
// ErrCheck, and errors.Is matches it.
type ConstraintError struct {
	Kind       error
	Constraint Constraint
	err        *pgconn.PgError
}

func (e *ConstraintError) Error() string {
	return fmt.Sprintf("%v (%s): %v", e.Kind, e.Constraint, e.err)
}

// Is matches the kind of refusal.
func (e *ConstraintError) Is(target error) bool { return target == e.Kind }

// Unwrap returns the PostgreSQL error.
func (e *ConstraintError) Unwrap() error { return e.err }

// RefusedBy reports whether err is a write refused by the constraint c.
func RefusedBy(err error, c Constraint) bool {
	var ce *ConstraintError
	return errors.As(err, &ce) && ce.Constraint == c
}

// classify turns PostgreSQL's constraint and race refusals into this package's errors and returns
// any other error unchanged.
func classify(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	var kind error
	switch pgErr.Code {
	case codeUniqueViolation:
		kind = ErrDuplicate
	case codeForeignKeyViolation:
		kind = ErrForeignKey
	case codeCheckViolation:
		kind = ErrCheck
	case codeSerializationFailure, codeDeadlockDetected:
		return fmt.Errorf("%w: %w", ErrRetryableRace, err)
	default:
		return err
	}
	return &ConstraintError{Kind: kind, Constraint: Constraint(pgErr.ConstraintName), err: pgErr}
}

// ServerErrorCode is the SQLSTATE of an error PostgreSQL reported (for log fields that must not
// carry error text); ok is false for any other error.
func ServerErrorCode(err error) (code string, ok bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code, true
	}
	return "", false
}

// ServerErrorClass is the log class of an error PostgreSQL reported, SQLSTATE_<code> (a field
// that must not carry error text); ok is false for any other error.
func ServerErrorClass(err error) (class string, ok bool) {
	if code, ok := ServerErrorCode(err); ok {
		return "SQLSTATE_" + code, true
	}
	return "", false
}

// ServerRefused reports whether PostgreSQL answered with an error, as opposed to not being reached
// or not answering.
func ServerRefused(err error) bool {
	_, ok := ServerErrorCode(err)
	return ok
}

// ConnectionFailed reports whether err is a failure of the connection itself: the request never
// reached the server, or the connection timed out.
func ConnectionFailed(err error) bool {
	return pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}

// AlreadyExists reports whether a CREATE of a role or database failed because it exists, including
// the race in which two sessions create it at once (the catalog's unique index refuses the loser).
func AlreadyExists(err error) bool {
	code, _ := ServerErrorCode(err)
	return code == codeDuplicateObject || code == codeUniqueViolation
}

// CommitChangedNothing reports whether a failed COMMIT certainly left the database unchanged: the
// server answered with an error (or rolled back), or the request never left the client. Any other
// failure leaves the outcome unknown, and callers must say so rather than retry.
func CommitChangedNothing(err error) bool {
	return ServerRefused(err) || pgconn.SafeToRetry(err) || errors.Is(err, pgx.ErrTxCommitRollback)
}
