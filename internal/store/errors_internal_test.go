package store

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestClassifyNamesEveryRefusalCallersBranchOn(t *testing.T) {
	t.Parallel()
	plain := errors.New("connection reset")
	for _, tc := range []struct {
		name       string
		err        error
		kind       error // nil: returned unchanged
		constraint Constraint
	}{
		{"unique violation", &pgconn.PgError{Code: "23505", ConstraintName: "namespaces_name_key"}, ErrDuplicate, "namespaces_name_key"},
		{"foreign key violation", &pgconn.PgError{Code: "23503", ConstraintName: "agents_configuration_id_fkey"}, ErrForeignKey, "agents_configuration_id_fkey"},
		{"check violation", &pgconn.PgError{Code: "23514", ConstraintName: string(ConstraintWorkResultValid)}, ErrCheck, ConstraintWorkResultValid},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, ErrRetryableRace, ""},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, ErrRetryableRace, ""},
		{"another server error", &pgconn.PgError{Code: "42501"}, nil, ""},
		{"not a server error", plain, nil, ""},
		{"context", context.Canceled, nil, ""},
	} {
		got := classify(tc.err)
		if tc.kind == nil {
			if got != tc.err {
				t.Errorf("%s: changed to %v", tc.name, got)
			}
			continue
		}
		if !errors.Is(got, tc.kind) {
			t.Errorf("%s: %v is not %v", tc.name, got, tc.kind)
		}
		for _, other := range []error{ErrDuplicate, ErrForeignKey, ErrCheck, ErrRetryableRace} {
			if other != tc.kind && errors.Is(got, other) {
				t.Errorf("%s: %v is also %v", tc.name, got, other)
			}
		}
		if tc.constraint != "" && !RefusedBy(got, tc.constraint) {
			t.Errorf("%s: not refused by %s", tc.name, tc.constraint)
		}
		var pgErr *pgconn.PgError
		if !errors.As(got, &pgErr) || pgErr != tc.err {
			t.Errorf("%s: the PostgreSQL error is not wrapped", tc.name)
		}
	}
	if RefusedBy(plain, ConstraintExistingNamespaceLive) {
		t.Error("a plain error is refused by a constraint")
	}
}

func TestClaimRaceIncludesTheOneClaimPerLaneIndex(t *testing.T) {
	t.Parallel()
	lane := &pgconn.PgError{Code: "23505", ConstraintName: string(constraintOneClaimPerResource)}
	if err := claimRace(lane); !errors.Is(err, ErrRetryableRace) || !errors.Is(err, ErrDuplicate) {
		t.Fatalf("lane collision: %v", err)
	}
	if err := claimRace(&pgconn.PgError{Code: "40001"}); !errors.Is(err, ErrRetryableRace) {
		t.Fatalf("serialization failure: %v", err)
	}
	if err := claimRace(&pgconn.PgError{Code: "23505", ConstraintName: "controller_work_pkey"}); errors.Is(err, ErrRetryableRace) {
		t.Fatalf("another duplicate is a race: %v", err)
	}
}

func TestServerErrorHelpers(t *testing.T) {
	t.Parallel()
	if code, ok := ServerErrorCode(classify(&pgconn.PgError{Code: "23505"})); !ok || code != "23505" {
		t.Fatalf("code %q %v", code, ok)
	}
	if _, ok := ServerErrorCode(errors.New("x")); ok || ServerRefused(errors.New("x")) {
		t.Fatal("a plain error was reported by the server")
	}
	for code, want := range map[string]bool{"42710": true, "23505": true, "42501": false} {
		if got := AlreadyExists(&pgconn.PgError{Code: code}); got != want {
			t.Errorf("AlreadyExists(%s) = %v", code, got)
		}
	}
}
