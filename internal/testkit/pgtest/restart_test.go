package pgtest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A crashed server leaves no process behind, starts again on its data directory through WAL
// recovery, and keeps exactly the committed transactions.
func TestCrashedServerRecoversFromTheWAL(t *testing.T) {
	ctx := context.Background()
	srv, err := StartRestartableServer(ctx, ServerOptions{Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	conn, err := pgx.Connect(ctx, srv.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE TABLE t (n int PRIMARY KEY)`,
		`INSERT INTO t SELECT generate_series(1, 1000)`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	// A transaction in flight at the crash: its row must not survive.
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO t VALUES (0)`); err != nil {
		t.Fatal(err)
	}
	pid := srv.pm.cmd.Process.Pid
	if !groupAlive(pid) {
		t.Fatal("groupAlive does not see the running server")
	}

	if err := srv.Crash(); err != nil {
		t.Fatal(err)
	}
	if groupAlive(pid) {
		t.Fatal("a process of the crashed server survived")
	}
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("a commit on the crashed server succeeded")
	}
	conn.Close(ctx)

	if err := srv.Start(ctx); err != nil {
		t.Fatalf("start after the crash: %v", err)
	}
	log, err := os.ReadFile(srv.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "automatic recovery in progress") {
		t.Fatalf("no WAL recovery in the server log:\n%s", log)
	}
	conn, err = pgx.Connect(ctx, srv.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var count, lowest int
	if err := conn.QueryRow(ctx, `SELECT count(*), min(n) FROM t`).Scan(&count, &lowest); err != nil {
		t.Fatal(err)
	}
	if count != 1000 || lowest != 1 {
		t.Fatalf("after recovery: %d rows, lowest %d; want the 1000 committed rows from 1", count, lowest)
	}

	// A fast shutdown and start still work after a recovery.
	srv.Stop()
	if err := srv.Start(ctx); err != nil {
		t.Fatalf("start after a stop: %v", err)
	}
}
