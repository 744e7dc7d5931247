package cli_test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/openclaw/occ/internal/devstack"
	"github.com/openclaw/occ/internal/store"
)

// tourMarker precedes the tour's command block in README.md and docs/quickstart.md.
const tourMarker = "<!-- tour: TestREADMETourRunsVerbatim runs this block as it stands -->\n```sh\n"

// tourBlock is the command block after the marker.
func tourBlock(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, found := strings.Cut(string(raw), tourMarker)
	block, _, closed := strings.Cut(rest, "```")
	if !found || !closed {
		t.Fatalf("%s has no tour block after %q", path, tourMarker)
	}
	return block
}

// TestREADMETourRunsVerbatim runs the README's tour as it stands against occ dev without flags
// (what make dev runs), in a directory standing in for a fresh checkout that holds bin/occ only:
// as the current user and, when that is root, again as an unprivileged user. The tour must
// succeed and leave the checkout as it found it. docs/quickstart.md shows the same block.
func TestREADMETourRunsVerbatim(t *testing.T) {
	t.Parallel()
	tour := tourBlock(t, filepath.Join("..", "..", "README.md"))
	if quick := tourBlock(t, filepath.Join("..", "..", "docs", "quickstart.md")); quick != tour {
		t.Fatalf("docs/quickstart.md shows another tour:\n%s\nREADME.md:\n%s", quick, tour)
	}
	bin := buildOcc(t)
	t.Run("as the current user", func(t *testing.T) { runTour(t, bin, tour, nil) })
	if os.Geteuid() == 0 {
		t.Run("as an unprivileged user", func(t *testing.T) { runTour(t, bin, tour, &syscall.Credential{Uid: 65534, Gid: 65534}) })
	}
}

func runTour(t *testing.T, bin, tour string, cred *syscall.Credential) {
	root, err := os.MkdirTemp("", "occ-tour-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	checkout := filepath.Join(root, "checkout")
	home := filepath.Join(root, "home")
	stateHome := filepath.Join(root, "state")
	for dir, mode := range map[string]os.FileMode{root: 0o755, filepath.Join(checkout, "bin"): 0o755, home: 0o700, stateHome: 0o755} {
		if err := os.MkdirAll(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(checkout, 0o755); err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		for _, dir := range []string{home, stateHome} {
			if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
				t.Fatal(err)
			}
		}
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(checkout, "bin", "occ"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	port, err := devstack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_STATE_HOME=" + stateHome, "OCC_WORKER_POLL_INTERVAL_MS=50"}

	// make dev: bin/occ dev from the checkout, no flags but a free port.
	dev := exec.Command(filepath.Join("bin", "occ"), "dev", "--port", fmt.Sprint(port))
	dev.Dir, dev.Env = checkout, env
	dev.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	p := startDevCommand(t, dev)
	p.waitURL(t)

	sh := exec.Command("bash", "-euo", "pipefail", "-c", tour)
	sh.Dir, sh.Env = checkout, env
	sh.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("the tour failed: %v\n%s\n--- occ dev ---\n%s", err, out, p.output())
	}
	for _, want := range []string{"]  ready\n", "succeeded after", "\n*        rev_", "   tour   active   running   rev_"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("the tour's output lacks %q:\n%s", want, out)
		}
	}
	p.stop(t, syscall.SIGINT)

	var written []string
	_ = filepath.WalkDir(checkout, func(path string, _ fs.DirEntry, _ error) error {
		if rel, _ := filepath.Rel(checkout, path); rel != "." && rel != "bin" && rel != filepath.Join("bin", "occ") {
			written = append(written, rel)
		}
		return nil
	})
	if len(written) > 0 {
		t.Fatalf("the tour wrote into the checkout: %v", written)
	}
}

// TestQuickstartShowsTheMigrations: the quickstart's sample output of occ dev lists every
// migration it applies, and their number.
func TestQuickstartShowsTheMigrations(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "quickstart.md"))
	if err != nil {
		t.Fatal(err)
	}
	migrations, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	for _, m := range migrations {
		want += "    applied " + m.Name + "\n"
	}
	want += fmt.Sprintf("==> Migrate: applied %d migrations\n", len(migrations))
	if !strings.Contains(string(raw), want) {
		t.Fatalf("docs/quickstart.md does not show:\n%s", want)
	}
}
