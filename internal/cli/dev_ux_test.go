package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/devstack"
	"github.com/openclaw/occ/internal/driver/docker"
)

func keyID(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Data struct{ ID string } }
	if err := json.Unmarshal(raw, &doc); err != nil || doc.Data.ID == "" {
		t.Fatalf("key file %s: %v", path, err)
	}
	return doc.Data.ID
}

// TestDevDefaultsRenewsItsKeyAndRefusesASecondRun: occ dev without flags selects the simulated
// Compute Driver and says what it can and cannot do; it writes the context dev that client
// commands use without flags; a second occ dev on the same state directory and port is told
// about the first one; after the key was revoked, the next start issues a fresh one.
func TestDevDefaultsRenewsItsKeyAndRefusesASecondRun(t *testing.T) {
	t.Parallel()
	state := devStateDir(t)
	home := t.TempDir()
	port, err := devstack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	bin := buildOcc(t)
	env := map[string]string{"HOME": home}
	first := startDevWith(t, bin, state, port, env)
	url := first.waitURL(t)
	out := first.output()
	config := filepath.Join(home, ".config", "occ", "config.yaml")
	for _, want := range []string{
		"==> Compute: simulated\n",
		"  Compute:          simulated: Namespaces become ready and Agents deploy, simulated (no Agent process runs); it cannot run an Agent for real.\n",
		"Choose another with --compute docker (a Docker network per Namespace, no Agents) or --compute kubernetes --kubeconfig FILE",
		"  Context:          dev in " + config + " (current: client commands use it)\n",
		"Try, in another terminal:\n  " + bin + " installation get\n",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("banner lacks %q:\n%s", want, out)
		}
	}

	// The lock is checked before the port: the message is about the running occ dev.
	r := run(env, "dev", "--state-dir", state, "--port", fmt.Sprint(port))
	want := fmt.Sprintf("occ dev: another occ dev is already running with the state directory %s (process %d, API %s).", state, first.cmd.Process.Pid, url)
	if r.code != 1 || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "is taken") {
		t.Fatalf("second occ dev: %+v", r)
	}

	// The client needs no flag: the context dev says everything.
	mustSucceed(t, run(env, "namespace", "list"), "namespace list through the context dev")
	keyFile := filepath.Join(state, "bootstrap-key.json")
	revoked := keyID(t, keyFile)
	mustSucceed(t, run(env, "service-key", "revoke", revoked, "--yes"), "revoke the bootstrap key")
	if r := run(env, "namespace", "list"); r.code != 1 || !strings.Contains(r.stderr, "occ dev issues a fresh development key when it starts") {
		t.Fatalf("after revocation: %+v", r)
	}
	first.stop(t, syscall.SIGINT)

	second := startDevWith(t, bin, state, port, env)
	second.waitURL(t)
	renewed := keyID(t, keyFile)
	if renewed == revoked || !strings.Contains(second.output(), "the key is revoked or expired: issued a fresh development key "+renewed) {
		t.Fatalf("no renewal (%s → %s):\n%s", revoked, renewed, second.output())
	}
	mustSucceed(t, run(env, "namespace", "list"), "namespace list with the renewed key")
	if info, err := os.Stat(keyFile); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("renewed key file: %v %v", info, err)
	}
	second.stop(t, syscall.SIGTERM)
}

func dockerAnswers() bool {
	out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").Output()
	return err == nil && len(bytes.TrimSpace(out)) > 0
}

// networksOf lists the Docker networks labelled with a Namespace id.
func networksOf(t *testing.T, namespaceID string) []string {
	t.Helper()
	out, err := exec.Command("docker", "network", "ls", "--quiet", "--filter", "label="+docker.LabelNamespaceID+"="+namespaceID).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(out))
}

// defaultNamespaceReady waits for the default Namespace of a running occ dev and returns its id.
func defaultNamespaceReady(t *testing.T, dev *devProcess, url, keyFile string) string {
	t.Helper()
	key := readKey(t, keyFile)
	deadline := time.Now().Add(time.Minute)
	for {
		var list struct{ Data []struct{ ID, Status string } }
		if code := getJSON(t, url+"/namespaces", key, &list); code == 200 && len(list.Data) == 1 && list.Data[0].Status == "ready" {
			return list.Data[0].ID
		}
		if time.Now().After(deadline) {
			t.Fatalf("the default Namespace did not become ready:\n%s", dev.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDevResetRemovesTheDockerNetworks: --reset tears down the Docker networks the old
// Installation's Namespaces had; when the Docker Engine cannot be reached it prints the command
// that removes each one instead.
func TestDevResetRemovesTheDockerNetworks(t *testing.T) {
	t.Parallel()
	if !dockerAnswers() {
		t.Skip("Docker Engine not reachable at /var/run/docker.sock: the Docker Compute Driver is not exercised")
	}
	state := devStateDir(t)
	env := map[string]string{"HOME": t.TempDir()}
	port, err := devstack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	bin := buildOcc(t)
	keyFile := filepath.Join(state, "bootstrap-key.json")
	var created []string
	t.Cleanup(func() {
		for _, ns := range created {
			for _, id := range networksOf(t, ns) {
				_ = exec.Command("docker", "network", "rm", id).Run()
			}
		}
	})

	first := startDevWith(t, bin, state, port, env, "--compute", "docker")
	old := defaultNamespaceReady(t, first, first.waitURL(t), keyFile)
	created = append(created, old)
	if len(networksOf(t, old)) != 1 {
		t.Fatalf("no network for %s", old)
	}
	first.stop(t, syscall.SIGINT)

	second := startDevWith(t, bin, state, port, env, "--reset", "--compute", "docker")
	fresh := defaultNamespaceReady(t, second, second.waitURL(t), keyFile)
	created = append(created, fresh)
	if !strings.Contains(second.output(), "reset: removed what the docker Compute Driver made for 1 Namespaces") || len(networksOf(t, old)) != 0 {
		t.Fatalf("the old network stayed:\n%s", second.output())
	}
	second.stop(t, syscall.SIGINT)

	// No Docker Engine at reset time: the command that removes the network is printed.
	env["DOCKER_HOST"] = "unix://" + filepath.Join(t.TempDir(), "no-docker.sock")
	third := startDevWith(t, bin, state, port, env, "--reset")
	third.waitURL(t)
	third.stop(t, syscall.SIGINT)
	m := regexp.MustCompile(`reset: these were not removed; remove them with:\n {6}(docker network rm (\S+))\n`).FindStringSubmatch(third.output())
	if m == nil || m[2] != docker.NetworkName(fresh) || len(networksOf(t, fresh)) != 1 {
		t.Fatalf("no removal command for %s:\n%s", fresh, third.output())
	}
	if out, err := exec.Command("sh", "-c", m[1]).CombinedOutput(); err != nil || len(networksOf(t, fresh)) != 0 {
		t.Fatalf("%s: %v %s", m[1], err, out)
	}
}
