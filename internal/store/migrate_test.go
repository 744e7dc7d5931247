package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestMigrateTwiceIsNoOpAndCheckIsUpToDate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	conn := connect(t, db.OwnerURL)

	before, err := store.CheckMigrations(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := store.Migrations()
	if len(before.Pending) != len(all) || before.UpToDate() {
		t.Fatalf("empty database: pending %d of %d", len(before.Pending), len(all))
	}

	first, err := store.Migrate(ctx, conn, pgtest.AppRole, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Applied) != len(all) || !first.Status.UpToDate() {
		t.Fatalf("first run applied %d, status %+v", len(first.Applied), first.Status)
	}
	second, err := store.Migrate(ctx, conn, pgtest.AppRole, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Applied) != 0 {
		t.Fatalf("second run applied %d migrations", len(second.Applied))
	}
	after, err := store.CheckMigrations(ctx, conn)
	if err != nil || !after.UpToDate() {
		t.Fatalf("check after migrate: %+v %v", after, err)
	}
}

func TestConcurrentMigrationsSerialize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	const runs = 3
	results := make([]store.MigrateResult, runs)
	errs := make([]error, runs)
	var wg sync.WaitGroup
	for i := range runs {
		conn := connect(t, db.OwnerURL)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = store.Migrate(ctx, conn, pgtest.AppRole, nil)
		}()
	}
	wg.Wait()
	all, _ := store.Migrations()
	total := 0
	for i := range runs {
		if errs[i] != nil {
			t.Fatalf("run %d: %v", i, errs[i])
		}
		total += len(results[i].Applied)
	}
	if total != len(all) {
		t.Fatalf("concurrent runs applied %d migrations in total, want %d (each exactly once)", total, len(all))
	}
}

func TestMigrateRefusesMissingApplicationRoleBeforeDDL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	conn := connect(t, db.OwnerURL)
	_, err := store.Migrate(ctx, conn, "occ_role_that_does_not_exist", nil)
	var me *store.MigrationError
	if !errors.As(err, &me) || me.Code != store.CodeApplicationRoleMissing {
		t.Fatalf("want %s, got %v", store.CodeApplicationRoleMissing, err)
	}
	var schema *string
	if err := conn.QueryRow(ctx, `SELECT nspname::text FROM pg_namespace WHERE nspname = 'occ'`).Scan(&schema); !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("schema occ exists after refused migration (err %v)", err)
	}
}

func TestCheckReportsUnknownHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := connect(t, db.OwnerURL)
	if _, err := conn.Exec(ctx, `INSERT INTO occ.schema_migrations (version, name, checksum) VALUES (9999, '9999_future', 'x')`); err != nil {
		t.Fatal(err)
	}
	status, err := store.CheckMigrations(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if status.Supported() || len(status.Unknown) != 1 || status.Unknown[0].Version != 9999 {
		t.Fatalf("status %+v", status)
	}
	_, err = store.Migrate(ctx, conn, pgtest.AppRole, nil)
	var me *store.MigrationError
	if !errors.As(err, &me) || me.Code != store.CodeMigrationHistoryUnsupported {
		t.Fatalf("want %s, got %v", store.CodeMigrationHistoryUnsupported, err)
	}
}
