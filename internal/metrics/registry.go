package metrics

import (
	"fmt"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Services, the value of the constant label service.
const (
	ServiceAPI    = "api"
	ServiceWorker = "worker"
)

// Histogram buckets, in seconds.
var (
	httpBuckets        = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	attemptBuckets     = []float64{0.01, 0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 900}
	agentOpBuckets     = []float64{0.1, 0.5, 1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 240, 300, 450, 600, 900, 1800}
	schedLatencyMetric = regexp.MustCompile(`^/sched/latencies:seconds$`)
)

// NewRegistry returns a registry holding the Go runtime and process collectors, named occ_go_* and
// occ_process_* and labelled service=<service>. service must be ServiceAPI or ServiceWorker; any
// other value is a programming error and panics. Add the application families with NewAPIMetrics
// or NewWorkerMetrics.
func NewRegistry(service string) *prometheus.Registry {
	if service != ServiceAPI && service != ServiceWorker {
		panic(fmt.Sprintf("metrics: unknown service %q", service))
	}
	reg := prometheus.NewRegistry()
	runtime := prometheus.WrapRegistererWithPrefix("occ_", withService(reg, service))
	runtime.MustRegister(
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
			collectors.GoRuntimeMetricsRule{Matcher: schedLatencyMetric})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

func withService(reg prometheus.Registerer, service string) prometheus.Registerer {
	return prometheus.WrapRegistererWith(prometheus.Labels{"service": service}, reg)
}
