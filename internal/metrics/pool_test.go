package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

func TestMetricsPoolIsReadOnlyAndBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	pool, err := NewPool(db.AppURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if c := pool.Config(); c.MaxConns != 2 || c.ConnConfig.ConnectTimeout != 500*time.Millisecond {
		t.Fatalf("max conns %d, connect timeout %v", c.MaxConns, c.ConnConfig.ConnectTimeout)
	}
	var readOnly, timeout, app string
	err = pool.QueryRow(ctx, `SELECT current_setting('default_transaction_read_only'), current_setting('statement_timeout'),
	  current_setting('application_name')`).Scan(&readOnly, &timeout, &app)
	if err != nil {
		t.Fatal(err)
	}
	if readOnly != "on" || timeout != "1500ms" || app != "occ-worker-metrics" {
		t.Fatalf("read only %q, statement timeout %q, application %q", readOnly, timeout, app)
	}
	_, err = pool.Exec(ctx, `INSERT INTO occ.namespaces (id, name) VALUES ($1, 'never')`, "ns_"+uuid.NewString())
	if state, _ := store.ServerErrorCode(err); state != "25006" {
		t.Fatalf("write on the metrics pool: %v (state %s)", err, state)
	}
	if _, err := store.WorkBacklog(ctx, pool); err != nil {
		t.Fatal(err)
	}
	_, err = pool.Exec(ctx, `SELECT pg_sleep(5)`)
	if state, _ := store.ServerErrorCode(err); state != "57014" {
		t.Fatalf("a slow statement: %v (state %s), want statement timeout", err, state)
	}
}

func TestMetricsPoolRefusesABadURL(t *testing.T) {
	t.Parallel()
	if _, err := NewPool("postgres://%zz"); err == nil {
		t.Fatal("accepted")
	}
}
