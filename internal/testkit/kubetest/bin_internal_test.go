package kubetest

import (
	"strings"
	"testing"
)

func TestMissingBinariesMessage(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("OCC_KUBE_BIN", dir)
	if BinDir() != dir {
		t.Fatalf("BinDir = %s, want %s", BinDir(), dir)
	}
	_, err := findBinaries(true)
	if err == nil || !strings.Contains(err.Error(), "make kube-bin") || !strings.Contains(err.Error(), dir) ||
		!strings.Contains(err.Error(), "kube-controller-manager") {
		t.Fatalf("missing binaries error: %v", err)
	}
}

func TestDefaultBinDir(t *testing.T) {
	t.Setenv("OCC_KUBE_BIN", "")
	t.Setenv("XDG_CACHE_HOME", "/x/cache")
	if got := BinDir(); got != "/x/cache/occ/kube/v1.37.2" {
		t.Fatalf("BinDir = %s", got)
	}
}
