package kubernetes

import (
	"testing"

	"github.com/openclaw/occ/internal/testkit/kubetest"
)

// TestMain runs the package's tests against one shared kube-apiserver (kubetest.Shared) and stops
// it afterwards.
func TestMain(m *testing.M) { kubetest.Main(m) }
