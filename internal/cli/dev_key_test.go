package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/bootstrap"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

// TestDevelopmentKeyRenewal: a live bootstrap key is kept; an expired one, a revoked one and a
// missing file are replaced by a fresh key for the same ServicePrincipal, audited; production
// refuses.
func TestDevelopmentKeyRenewal(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	keyFile := filepath.Join(t.TempDir(), "bootstrap-key.json")
	if r := run(bootstrapEnv(db, keyFile), "bootstrap"); r.code != 0 {
		t.Fatalf("bootstrap: %+v", r)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.AppURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	owner := db.Owner(t)
	cfg, err := settings.LoadBootstrap(settings.MapLookup(bootstrapEnv(db, keyFile)))
	if err != nil {
		t.Fatal(err)
	}
	original := keyID(t, keyFile)
	live := func() bool {
		_, err := store.GetLiveServiceKey(ctx, conn, auth.HashServiceKey(readKey(t, keyFile)))
		return err == nil
	}

	if r, err := bootstrap.EnsureDevelopmentKey(ctx, conn, cfg); err != nil || r.Reason != "" || keyID(t, keyFile) != original {
		t.Fatalf("live key: %+v %v", r, err)
	}
	if _, err := owner.Exec(ctx, `UPDATE occ.service_keys SET expires_at = created_at + interval '1 millisecond' WHERE id = $1`, original); err != nil {
		t.Fatal(err)
	}
	if live() {
		t.Fatal("the expired key is still live")
	}
	r, err := bootstrap.EnsureDevelopmentKey(ctx, conn, cfg)
	if err != nil || r.Reason != bootstrap.RenewedRefused || r.KeyID == original || keyID(t, keyFile) != r.KeyID || !live() {
		t.Fatalf("expired key: %+v %v", r, err)
	}
	var sps []string
	rows, err := owner.Query(ctx, `SELECT service_principal_id FROM occ.service_keys ORDER BY created_at`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var sp string
		_ = rows.Scan(&sp)
		sps = append(sps, sp)
	}
	rows.Close()
	if len(sps) != 2 || sps[0] != sps[1] {
		t.Fatalf("the fresh key belongs to another ServicePrincipal: %v", sps)
	}
	var audited int
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM occ.audit_events WHERE action = 'openclaw.auth.service-keys.create' AND resource_id = $1`,
		r.KeyID).Scan(&audited); err != nil || audited != 1 {
		t.Fatalf("audit of the renewal: %d %v", audited, err)
	}
	if info, err := os.Stat(keyFile); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", info, err)
	}

	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	if r, err := bootstrap.EnsureDevelopmentKey(ctx, conn, cfg); err != nil || r.Reason != bootstrap.RenewedMissing || !live() {
		t.Fatalf("missing file: %+v %v", r, err)
	}

	production := cfg
	production.Mode = settings.Production
	if _, err := owner.Exec(ctx, `DELETE FROM occ.service_keys`); err != nil {
		t.Fatal(err)
	}
	if _, err := bootstrap.EnsureDevelopmentKey(ctx, conn, production); err == nil || live() {
		t.Fatal("production renewed a key")
	}
}
