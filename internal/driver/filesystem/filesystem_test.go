package filesystem_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/filesystem"
)

const (
	ns  = "ns_11111111-1111-4111-8111-111111111111"
	cfg = "cfg_22222222-2222-4222-8222-222222222222"
	sec = "sec_33333333-3333-4333-8333-333333333333"
)

func TestConfigurations(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "configurations")
	d, err := filesystem.NewConfigurations("configuration-filesystem", map[string]any{"root": root})
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	doc := driver.ConfigurationDocument{ID: cfg, NamespaceID: ns, Kind: "agent", Generation: 1, Values: json.RawMessage(`{"a":1}`), CreatedAt: created}
	if _, err := d.Read(ctx, doc.Ref()); !errors.Is(err, driver.ErrConfigurationNotFound) {
		t.Fatalf("read before create: %v", err)
	}
	if _, err := d.Create(ctx, doc); err != nil {
		t.Fatal(err)
	}
	dir, file := filepath.Join(root, ns), filepath.Join(root, ns, cfg+".json")
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v", st.Mode())
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v", st.Mode())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
	got, err := d.Read(ctx, doc.Ref())
	if err != nil || string(got.Values) != `{"a":1}` || got.Generation != 1 || !got.CreatedAt.Equal(created) {
		t.Fatalf("read %+v %v", got, err)
	}
	// Generations move by exactly one (also back, for a rollback); identity and creation stay.
	for _, bad := range []driver.ConfigurationDocument{
		{ID: cfg, NamespaceID: ns, Kind: "agent", Generation: 3, Values: json.RawMessage(`{}`), CreatedAt: created},
		{ID: cfg, NamespaceID: ns, Kind: "agent", Generation: 2, Values: json.RawMessage(`{}`), CreatedAt: created.Add(time.Second)},
	} {
		if _, err := d.Update(ctx, bad); err == nil {
			t.Fatalf("update accepted %+v", bad)
		}
	}
	doc.Generation, doc.Values = 2, json.RawMessage(`{"a":2}`)
	if _, err := d.Update(ctx, doc); err != nil {
		t.Fatal(err)
	}
	doc.Generation, doc.Values = 1, json.RawMessage(`{"a":1}`)
	if _, err := d.Update(ctx, doc); err != nil {
		t.Fatalf("rollback step: %v", err)
	}
	// Another Namespace never reads it; ids cannot name other paths.
	other := driver.ConfigurationRef{NamespaceID: "ns_44444444-4444-4444-8444-444444444444", ID: cfg}
	if _, err := d.Read(ctx, other); !errors.Is(err, driver.ErrConfigurationNotFound) {
		t.Fatalf("other namespace: %v", err)
	}
	if _, err := d.Read(ctx, driver.ConfigurationRef{NamespaceID: ns, ID: "../" + cfg}); err == nil {
		t.Fatal("a path-like id was accepted")
	}
	if err := d.Validate(ctx, driver.ConfigurationDocument{Values: json.RawMessage(`[1]`)}); err == nil {
		t.Fatal("a non-object values was accepted")
	}
	if err := d.Delete(ctx, doc.Ref()); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, doc.Ref()); err != nil {
		t.Fatalf("delete of an absent file: %v", err)
	}
	if _, err := filesystem.NewConfigurations("c", map[string]any{"root": "relative"}); err == nil {
		t.Fatal("a relative root was accepted")
	}
}

func TestSecrets(t *testing.T) {
	ctx := context.Background()
	if _, err := filesystem.NewSecrets("s", map[string]any{"root": t.TempDir()}, driver.Environment{Production: true}); err == nil {
		t.Fatal("production accepted the filesystem Secret Driver")
	}
	root := filepath.Join(t.TempDir(), "secrets")
	d, err := filesystem.NewSecrets("secret-filesystem", map[string]any{"root": root}, driver.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	id := driver.SecretIdentity{ID: sec, NamespaceID: ns, Name: "k"}
	ref, err := d.Create(ctx, id, []byte("first-value"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ref.Name+ref.Key+ref.UID+ref.NamespaceName, "first-value") {
		t.Fatal("the reference carries the value")
	}
	if st, _ := os.Stat(filepath.Join(root, ns, sec+".json")); st.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v", st.Mode())
	}
	stored := driver.StoredSecret{SecretIdentity: id, Ref: ref}
	if got, err := d.Resolve(ctx, stored); err != nil || got != ref {
		t.Fatalf("resolve %v %v", got, err)
	}
	forged := stored
	forged.Ref.UID = "another"
	if _, err := d.Resolve(ctx, forged); !errors.Is(err, driver.ErrSecretNotFound) {
		t.Fatalf("forged ownership: %v", err)
	}
	if err := d.Update(ctx, stored, []byte("second-value")); err != nil {
		t.Fatal(err)
	}
	var seen string
	if err := d.WithValue(ctx, stored, func(v []byte) error { seen = string(v); return nil }); err != nil || seen != "second-value" {
		t.Fatalf("with value %q %v", seen, err)
	}
	if err := d.Delete(ctx, stored); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Resolve(ctx, stored); !errors.Is(err, driver.ErrSecretNotFound) {
		t.Fatalf("resolve after delete: %v", err)
	}
}
