package cli_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/bootstrap"
	"github.com/openclaw/occ/internal/cli"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/testkit/kubetest"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(kubetest.Wrap(m)) }

type result struct {
	code           int
	stdout, stderr string
}

func run(env map[string]string, args ...string) result {
	var out, errOut bytes.Buffer
	code := cli.Execute(context.Background(), cli.Env{Lookup: settings.MapLookup(env), Stdout: &out, Stderr: &errOut, Version: "test"}, args)
	return result{code, out.String(), errOut.String()}
}

// events decodes JSON lines.
func events(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		out = append(out, m)
	}
	return out
}

func lastEvent(t *testing.T, s string) map[string]any {
	t.Helper()
	ev := events(t, s)
	if len(ev) == 0 {
		t.Fatalf("no log line in %q", s)
	}
	return ev[len(ev)-1]
}

func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	env := map[string]string{"OCC_MIGRATION_DATABASE_URL": db.OwnerURL, "OCC_DATABASE_APP_ROLE": pgtest.AppRole}

	check := run(env, "migrate", "--check")
	if check.code != 1 || lastEvent(t, check.stdout)["status"] != "pending" {
		t.Fatalf("check before migrate: %+v", check)
	}
	first := run(env, "migrate")
	if first.code != 0 {
		t.Fatalf("migrate: %+v", first)
	}
	if ev := lastEvent(t, first.stdout); ev["event"] != "migration.completed" || ev["result"] != "applied" || ev["severity"] != "INFO" {
		t.Fatalf("first run: %v", ev)
	}
	second := run(env, "migrate")
	if ev := lastEvent(t, second.stdout); second.code != 0 || ev["result"] != "unchanged" {
		t.Fatalf("second run: %+v", second)
	}
	check = run(env, "migrate", "--check")
	if ev := lastEvent(t, check.stdout); check.code != 0 || ev["event"] != "migration.checked" || ev["status"] != "up_to_date" {
		t.Fatalf("check after migrate: %+v", check)
	}
}

func TestMigrateFailures(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	for _, tc := range []struct {
		name string
		env  map[string]string
		code string
	}{
		{"missing url", map[string]string{}, "DATABASE_CONFIGURATION_INVALID"},
		{"bad url", map[string]string{"OCC_MIGRATION_DATABASE_URL": "mysql://x"}, "DATABASE_CONFIGURATION_INVALID"},
		{"missing role", map[string]string{"OCC_MIGRATION_DATABASE_URL": db.OwnerURL, "OCC_DATABASE_APP_ROLE": "occ_nobody"}, "APPLICATION_ROLE_MISSING"},
		{"unreachable", map[string]string{"OCC_MIGRATION_DATABASE_URL": "postgres://u:p@127.0.0.1:1/db"}, "PERSISTENCE_UNAVAILABLE"},
	} {
		r := run(tc.env, "migrate")
		if r.code != 1 || r.stdout != "" {
			t.Errorf("%s: %+v", tc.name, r)
			continue
		}
		ev := events(t, r.stderr)
		if len(ev) != 1 || ev[0]["event"] != "migration.failed" || ev[0]["code"] != tc.code || ev[0]["severity"] != "ERROR" {
			t.Errorf("%s: stderr %v", tc.name, ev)
		}
		if strings.Contains(r.stderr, "occ-test") || strings.Contains(r.stderr, "u:p@") {
			t.Errorf("%s: credentials in output: %s", tc.name, r.stderr)
		}
	}
}

func rowCounts(t *testing.T, owner *pgxpool.Pool) map[string]int {
	t.Helper()
	ctx := context.Background()
	rows, err := owner.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'occ' AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		_ = rows.Scan(&name)
		tables = append(tables, name)
	}
	rows.Close()
	counts := map[string]int{}
	for _, table := range tables {
		var n int
		if err := owner.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM occ.%q`, table)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		counts[table] = n
	}
	return counts
}

func bootstrapEnv(db *pgtest.Database, keyFile string) map[string]string {
	return map[string]string{
		"NODE_ENV":                       "development",
		"OCC_DATABASE_URL":               db.AppURL,
		"OCC_BOOTSTRAP_SERVICE_KEY_FILE": keyFile,
	}
}

func TestBootstrapDevelopment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	owner := db.Owner(t)
	keyFile := filepath.Join(t.TempDir(), "bootstrap-key.json")
	env := bootstrapEnv(db, keyFile)

	r := run(env, "bootstrap")
	if r.code != 0 {
		t.Fatalf("bootstrap: %+v", r)
	}
	ev := lastEvent(t, r.stdout)
	if ev["event"] != "installation.bootstrapped" || ev["service"] != "occ-bootstrap" {
		t.Fatalf("event %v", ev)
	}
	if strings.Contains(r.stdout, auth.ServiceKeyPrefix) {
		t.Fatal("the service key reached the log")
	}

	counts := rowCounts(t, owner)
	for table, want := range map[string]int{"installation": 1, "namespaces": 1, "controller_work": 1, "accounts": 1,
		"password_credentials": 1, "service_keys": 1, "iam_roles": 1, "iam_access_bindings": 2, "iam_identities": 2, "audit_events": 2} {
		if counts[table] != want {
			t.Errorf("%s: %d rows, want %d", table, counts[table], want)
		}
	}
	var nsID, status string
	if err := owner.QueryRow(ctx, `SELECT id, status FROM occ.namespaces WHERE name = 'default'`).Scan(&nsID, &status); err != nil || status != "provisioning" {
		t.Fatalf("default namespace: %s %v", status, err)
	}
	var state string
	if err := owner.QueryRow(ctx, `SELECT state FROM occ.controller_work WHERE idempotency_key = $1 AND namespace_target = 'ready'`,
		"namespace:"+nsID+":reconcile:ready").Scan(&state); err != nil || state != "queued" {
		t.Fatalf("work row: %s %v", state, err)
	}

	info, err := os.Stat(keyFile)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", info, err)
	}
	raw, _ := os.ReadFile(keyFile)
	var doc struct {
		Data map[string]string `json:"data"`
		Meta map[string]string `json:"meta"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "servicePrincipalId", "name", "expiresAt", "key"} {
		if doc.Data[k] == "" {
			t.Errorf("key file lacks data.%s", k)
		}
	}
	if len(doc.Data) != 5 || doc.Data["name"] != "bootstrap-admin" || !strings.HasPrefix(doc.Meta["installationId"], "ins_") {
		t.Errorf("key file %s", raw)
	}
	sum := sha256.Sum256([]byte(doc.Data["key"]))
	var stored int
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM occ.service_keys WHERE key_hash = $1 AND service_principal_id = $2`,
		sum[:], doc.Data["servicePrincipalId"]).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("stored key hash: %d %v", stored, err)
	}
	var hash string
	if err := owner.QueryRow(ctx, `SELECT password_hash FROM occ.password_credentials`).Scan(&hash); err != nil {
		t.Fatal(err)
	}
	if ok, _ := auth.VerifyPassword(hash, "openclaw-development-password"); !ok {
		t.Fatal("development password does not verify")
	}

	// A second run verifies and changes nothing.
	again := run(env, "bootstrap")
	if again.code != 0 || lastEvent(t, again.stdout)["event"] != "installation.already-bootstrapped" {
		t.Fatalf("second run: %+v", again)
	}
	if after := rowCounts(t, owner); fmt.Sprint(after) != fmt.Sprint(counts) {
		t.Fatalf("second run changed rows: %v -> %v", counts, after)
	}
	if raw2, _ := os.ReadFile(keyFile); !bytes.Equal(raw, raw2) {
		t.Fatal("second run rewrote the key file")
	}
}

func TestBootstrapRefusesExistingKeyFileWithoutChangingTheDatabase(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	owner := db.Owner(t)
	keyFile := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(keyFile, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := rowCounts(t, owner)
	r := run(bootstrapEnv(db, keyFile), "bootstrap")
	if r.code != 1 {
		t.Fatalf("bootstrap over an existing key file: %+v", r)
	}
	if ev := lastEvent(t, r.stderr); ev["event"] != "installation.bootstrap-failed" || ev["code"] != bootstrap.CodeBootstrapFailed {
		t.Fatalf("failure event %v", ev)
	}
	if after := rowCounts(t, owner); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("rows changed: %v -> %v", before, after)
	}
	if raw, _ := os.ReadFile(keyFile); string(raw) != "keep me" {
		t.Fatal("existing key file overwritten")
	}
}

func TestBootstrapProduction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	dir := t.TempDir()
	env := map[string]string{
		"NODE_ENV":                        "production",
		"OCC_DATABASE_URL":                db.AppURL,
		"OCC_AUTH_SECRET":                 strings.Repeat("s", 40),
		"OCC_AUTH_BASE_URL":               "https://occ.example.com",
		"OCC_BOOTSTRAP_SERVICE_KEY_FILE":  filepath.Join(dir, "key.json"),
		"OCC_BOOTSTRAP_PASSWORD_FILE":     filepath.Join(dir, "password"),
		"OCC_BOOTSTRAP_ADMIN_EMAIL":       " Admin@Example.COM ",
		"OCC_BOOTSTRAP_INSTALLATION_NAME": "Acme Production",
	}
	r := run(env, "bootstrap")
	if r.code != 0 {
		t.Fatalf("bootstrap: %+v", r)
	}
	password, err := os.ReadFile(filepath.Join(dir, "password"))
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(filepath.Join(dir, "password")); info.Mode().Perm() != 0o600 {
		t.Fatalf("password file mode %v", info.Mode())
	}
	owner := db.Owner(t)
	var hash, email, name string
	if err := owner.QueryRow(ctx, `SELECT p.password_hash, a.email, i.name FROM occ.password_credentials p
	  JOIN occ.accounts a ON a.id = p.account_id CROSS JOIN occ.installation i`).Scan(&hash, &email, &name); err != nil {
		t.Fatal(err)
	}
	if ok, _ := auth.VerifyPassword(hash, strings.TrimSpace(string(password))); !ok || email != "admin@example.com" || name != "Acme Production" {
		t.Fatalf("account %s %s, password verifies %v", email, name, ok)
	}
	var source string
	if err := owner.QueryRow(ctx, `SELECT details->>'source' FROM occ.audit_events WHERE kind = 'bootstrap'`).Scan(&source); err != nil || source != settings.SourceProduction {
		t.Fatalf("bootstrap audit source %q %v", source, err)
	}
	if strings.Contains(r.stdout, strings.TrimSpace(string(password))) {
		t.Fatal("password in the log")
	}
}

func TestConcurrentBootstrapsCreateOneInstallation(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	dir := t.TempDir()
	var wg sync.WaitGroup
	results := make([]result, 3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = run(bootstrapEnv(db, filepath.Join(dir, fmt.Sprintf("key-%d.json", i))), "bootstrap")
		}()
	}
	wg.Wait()
	created := 0
	for _, r := range results {
		if r.code != 0 {
			t.Fatalf("run failed: %+v", r)
		}
		if lastEvent(t, r.stdout)["event"] == "installation.bootstrapped" {
			created++
		}
	}
	if created != 1 {
		t.Fatalf("%d runs created an installation", created)
	}
	if n := rowCounts(t, db.Owner(t))["installation"]; n != 1 {
		t.Fatalf("%d installations", n)
	}
}

func TestBootstrapSettingsFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		code string
	}{
		{"no mode", map[string]string{}, settings.CodeConfigEnvInvalid},
		{"no database", map[string]string{"NODE_ENV": "development", "OCC_BOOTSTRAP_SERVICE_KEY_FILE": "/tmp/x"}, settings.CodeDatabaseConfigurationInvalid},
		{"short secret", map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": "postgres://x/y",
			"OCC_BOOTSTRAP_SERVICE_KEY_FILE": "/tmp/x", "OCC_AUTH_SECRET": "short"}, settings.CodeAuthSecretInvalid},
		{"unreachable", map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": "postgres://u:p@127.0.0.1:1/y",
			"OCC_BOOTSTRAP_SERVICE_KEY_FILE": "/tmp/occ-never-written.json"}, bootstrap.CodePersistenceUnavailable},
	} {
		r := run(tc.env, "bootstrap")
		if r.code != 1 {
			t.Errorf("%s: exit %d", tc.name, r.code)
			continue
		}
		if ev := lastEvent(t, r.stderr); ev["event"] != "installation.bootstrap-failed" || ev["code"] != tc.code {
			t.Errorf("%s: %v", tc.name, ev)
		}
	}
}

func TestVersionAndUsage(t *testing.T) {
	t.Parallel()
	if r := run(nil, "version"); r.code != 0 || !strings.HasPrefix(r.stdout, "Client: test\n") {
		t.Fatalf("version: %+v", r)
	}
	if r := run(nil, "no-such-command"); r.code != 2 {
		t.Fatalf("unknown command: %+v", r)
	}
}
