// Package deploy holds the Compose file and the Helm chart. Its test parses every YAML file and
// checks the Compose services; the chart is rendered with the Helm SDK and applied to a real
// kube-apiserver by the separate module deploy/helmtest.
package deploy

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestEveryYAMLFileParses(t *testing.T) {
	t.Parallel()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return err
		}
		if strings.Contains(filepath.ToSlash(path), "/templates/") {
			return nil // rendered below
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Errorf("%s: %v", path, err)
		} else if len(doc) == 0 {
			t.Errorf("%s: empty document", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestComposeServices(t *testing.T) {
	t.Parallel()
	var doc struct {
		Services map[string]struct {
			Ports   []string `json:"ports"`
			Volumes []string `json:"volumes"`
		} `json:"services"`
	}
	data, err := os.ReadFile("compose/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"postgres", "migrate", "bootstrap", "api", "worker"} {
		if _, ok := doc.Services[name]; !ok {
			t.Errorf("service %s missing", name)
		}
	}
	for name, svc := range doc.Services {
		for _, p := range svc.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s publishes %q beyond loopback", name, p)
			}
		}
		for _, v := range svc.Volumes {
			if strings.Contains(v, "docker.sock") && name != "worker" {
				t.Errorf("%s mounts the Docker socket", name)
			}
		}
	}
}

// TestComposeSignInOverride: the sign-in override passes every API sign-in variable by name only
// (a variable absent from the environment stays unset, never blank).
func TestComposeSignInOverride(t *testing.T) {
	t.Parallel()
	var doc struct {
		Services map[string]struct {
			Environment []string `json:"environment"`
		} `json:"services"`
	}
	data, err := os.ReadFile("compose/compose.sign-in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	env := doc.Services["api"].Environment
	if len(doc.Services) != 1 || len(env) == 0 {
		t.Fatalf("services %v", doc.Services)
	}
	for _, name := range []string{"OCC_AUTH_GITHUB_CLIENT_ID", "OCC_AUTH_GOOGLE_CLIENT_ID", "OCC_AUTH_OIDC_ISSUER", "OCC_AUTH_GITHUB_RECOVERY_USER_ID", "OCC_AUTH_CLI_SESSIONS"} {
		if !slices.Contains(env, name) {
			t.Errorf("%s is not passed", name)
		}
	}
	for _, e := range env {
		if strings.Contains(e, "=") {
			t.Errorf("%s gives a value; pass the name only", e)
		}
	}
}
