package store

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/occ/internal/problem"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migration error codes, logged by `occ migrate` as migration.failed.
const (
	CodeApplicationRoleMissing      = "APPLICATION_ROLE_MISSING"
	CodeMigrationHistoryUnsupported = "MIGRATION_HISTORY_UNSUPPORTED"
	CodeMigrationFailed             = "MIGRATION_FAILED"
	CodePersistenceUnavailable      = "PERSISTENCE_UNAVAILABLE"
)

// migrationLockKey serializes concurrent `occ migrate` runs (pg_advisory_lock keyspace is global
// to the database, so the value is fixed and documented in docs/operations.md).
const migrationLockKey int64 = 0x6f63635f6d6967 // "occ_mig"

// MigrationError is a refused or failed migration: a problem with a stable code for the operator,
// a safe message and the cause.
type MigrationError struct {
	problem.Problem
}

// Error is the message and the cause; the code is logged on its own.
func (e *MigrationError) Error() string {
	if e.Cause != nil {
		return e.Message + ": " + e.Cause.Error()
	}
	return e.Message
}

// Migration is one embedded, versioned SQL file.
type Migration struct {
	Version  int
	Name     string // e.g. 0001_schema
	SQL      string
	Checksum string // sha256 of SQL, hex
}

// AppliedMigration is one row of occ.schema_migrations.
type AppliedMigration struct {
	Version  int
	Name     string
	Checksum string
}

// MigrationStatus compares the database history with the embedded migrations.
type MigrationStatus struct {
	Applied  []AppliedMigration
	Pending  []Migration
	Unknown  []AppliedMigration // applied versions this binary does not know (a newer binary ran)
	Modified []AppliedMigration // applied versions whose checksum differs from the embedded file
}

// UpToDate reports whether nothing is pending and the history is fully known.
func (s MigrationStatus) UpToDate() bool {
	return len(s.Pending) == 0 && s.Supported()
}

// Supported reports whether this binary can migrate the database.
func (s MigrationStatus) Supported() bool {
	return len(s.Unknown) == 0 && len(s.Modified) == 0
}

var migrationName = regexp.MustCompile(`^([0-9]{4})_[a-z0-9_]+\.sql$`)

// Migrations returns the embedded migrations in version order.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		body, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		version, _ := strconv.Atoi(m[1])
		sum := sha256.Sum256(body)
		out = append(out, Migration{
			Version:  version,
			Name:     strings.TrimSuffix(e.Name(), ".sql"),
			SQL:      string(body),
			Checksum: hex.EncodeToString(sum[:]),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	// Versions are unique but may leave a gap: branches take their numbers ahead of merging, and
	// the history check applies whatever is not recorded yet.
	for i, m := range out {
		if m.Version < 1 || (i > 0 && m.Version == out[i-1].Version) {
			return nil, fmt.Errorf("migration versions must be unique and start from 1: found %s", m.Name)
		}
	}
	return out, nil
}

func privilegesSQL(appRole string) (string, error) {
	body, err := migrationFiles.ReadFile("migrations/privileges.sql")
	if err != nil {
		return "", err
	}
	return strings.ReplaceAll(string(body), "{{app_role}}", pgx.Identifier{appRole}.Sanitize()), nil
}

// CheckMigrations reads the history without changing anything.
func CheckMigrations(ctx context.Context, conn *pgx.Conn) (MigrationStatus, error) {
	all, err := Migrations()
	if err != nil {
		return MigrationStatus{}, err
	}
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('occ.schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return MigrationStatus{}, unavailable(err)
	}
	var applied []AppliedMigration
	if exists {
		rows, err := conn.Query(ctx, `SELECT version, name, checksum FROM occ.schema_migrations ORDER BY version`)
		if err != nil {
			return MigrationStatus{}, unavailable(err)
		}
		applied, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (AppliedMigration, error) {
			var a AppliedMigration
			err := r.Scan(&a.Version, &a.Name, &a.Checksum)
			return a, err
		})
		if err != nil {
			return MigrationStatus{}, unavailable(err)
		}
	}
	return compareHistory(all, applied), nil
}

func compareHistory(all []Migration, applied []AppliedMigration) MigrationStatus {
	status := MigrationStatus{Applied: applied}
	known := make(map[int]Migration, len(all))
	for _, m := range all {
		known[m.Version] = m
	}
	done := make(map[int]bool, len(applied))
	for _, a := range applied {
		done[a.Version] = true
		m, ok := known[a.Version]
		switch {
		case !ok:
			status.Unknown = append(status.Unknown, a)
		case m.Checksum != a.Checksum:
			status.Modified = append(status.Modified, a)
		}
	}
	for _, m := range all {
		if !done[m.Version] {
			status.Pending = append(status.Pending, m)
		}
	}
	return status
}

// MigrateResult says what a run did.
type MigrateResult struct {
	Applied []Migration
	Status  MigrationStatus // after the run
}

// Migrate applies the pending migrations, each in its own transaction, under a session advisory
// lock so that concurrent runs serialize (the second finds nothing to do), then re-applies the
// application role's privileges. The role must exist before any DDL runs.
func Migrate(ctx context.Context, conn *pgx.Conn, appRole string, onApplied func(Migration)) (MigrateResult, error) {
	var roleExists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1)`, appRole).Scan(&roleExists); err != nil {
		return MigrateResult{}, unavailable(err)
	}
	if !roleExists {
		return MigrateResult{}, &MigrationError{Problem: problem.Problem{Code: CodeApplicationRoleMissing, Message: "The application role does not exist. Create it before migrating."}}
	}

	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLockKey); err != nil {
		return MigrateResult{}, unavailable(err)
	}
	defer func() {
		// A fresh context: the unlock must run even when ctx was cancelled mid-migration.
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLockKey)
	}()

	status, err := CheckMigrations(ctx, conn)
	if err != nil {
		return MigrateResult{}, err
	}
	if !status.Supported() {
		return MigrateResult{Status: status}, &MigrationError{Problem: problem.Problem{Code: CodeMigrationHistoryUnsupported, Message: "The migration history contains versions this binary does not know or that were changed."}}
	}

	if _, err := conn.Exec(ctx, `
CREATE SCHEMA IF NOT EXISTS occ;
CREATE TABLE IF NOT EXISTS occ.schema_migrations (
  version    integer PRIMARY KEY,
  name       text NOT NULL,
  checksum   text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
)`); err != nil {
		return MigrateResult{}, failed("cannot create the migration history table", err)
	}

	var result MigrateResult
	for _, m := range status.Pending {
		if err := applyMigration(ctx, conn, m); err != nil {
			return result, failed("migration "+m.Name+" failed", err)
		}
		result.Applied = append(result.Applied, m)
		if onApplied != nil {
			onApplied(m)
		}
	}

	privileges, err := privilegesSQL(appRole)
	if err != nil {
		return result, failed("cannot read privileges", err)
	}
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, privileges)
		return err
	}); err != nil {
		return result, failed("cannot grant the application role its privileges", err)
	}

	result.Status, err = CheckMigrations(ctx, conn)
	return result, err
}

func applyMigration(ctx context.Context, conn *pgx.Conn, m Migration) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO occ.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)`,
			m.Version, m.Name, m.Checksum)
		return err
	})
}

func unavailable(err error) error {
	return &MigrationError{Problem: problem.Problem{Code: CodePersistenceUnavailable, Message: "PostgreSQL is unavailable", Cause: err}}
}

func failed(msg string, err error) error {
	var me *MigrationError
	if errors.As(err, &me) {
		return err
	}
	return &MigrationError{Problem: problem.Problem{Code: CodeMigrationFailed, Message: msg, Cause: err}}
}
