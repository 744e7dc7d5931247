package kubernetes

import (
	"context"
	"net/url"
	"testing"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/drivertest"
	"github.com/openclaw/occ/internal/testkit/kubetest"
)

// inspectedCompute adds the contract suite's Inspector to the driver: the cluster's admin view of
// the namespaces labelled for a Namespace.
type inspectedCompute struct {
	*Compute
	cluster *kubetest.Cluster
}

var (
	_ driver.Compute            = inspectedCompute{}
	_ drivertest.Inspector      = inspectedCompute{}
	_ driver.Preflighter        = inspectedCompute{}
	_ driver.Activator          = inspectedCompute{}
	_ driver.HarnessAuthSupport = inspectedCompute{}
)

// NamespaceCopies counts the Kubernetes namespaces labelled for ns, terminating ones included.
func (i inspectedCompute) NamespaceCopies(_ context.Context, ns driver.Namespace) (int, error) {
	items, err := i.cluster.Admin().List(kubetest.CorePath("", "namespaces", ""), url.Values{"labelSelector": {labelNamespace + "=" + ns.ID}})
	return len(items), err
}

func TestComputeContract(t *testing.T) {
	c := kubetest.Shared(t)
	drivertest.RunComputeContract(t, func(t *testing.T) driver.Compute {
		return inspectedCompute{Compute: newTestCompute(t, c, nil), cluster: c}
	})
}
