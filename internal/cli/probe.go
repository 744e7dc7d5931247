package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/settings"
)

// newProbeCommand is `occ probe worker [--ready]`: the exec probe of the worker container (the
// image has no shell). It checks the marker files of a running `occ worker` with the same
// environment.
func newProbeCommand(env Env) *cobra.Command {
	probe := &cobra.Command{Use: "probe", Short: "Container probes (exit 0 when healthy)", Args: cobra.NoArgs}
	var ready bool
	worker := &cobra.Command{
		Use:   "worker",
		Short: "Check the worker's liveness (or, with --ready, readiness) marker file",
		Long: `Reads the worker settings from the environment (as occ worker does) and checks the marker
file named by OCC_WORKER_LIVENESS_PATH, or OCC_WORKER_READINESS_PATH with --ready: it must exist and
hold a timestamp younger than max(120 s, 240 × poll interval, 6 × lease duration, 2 × database
timeout). Exits 0 when healthy and 1 otherwise, with one line on stderr saying why.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWorkerProbe(env, ready, time.Now())
		},
	}
	worker.Flags().BoolVar(&ready, "ready", false, "check the readiness marker instead of the liveness marker")
	probe.AddCommand(worker)
	return probe
}

// markerStaleAfter is the documented staleness rule of the worker's marker files.
func markerStaleAfter(cfg settings.Worker) time.Duration {
	return max(120*time.Second, 240*cfg.PollInterval, 6*cfg.LeaseDuration, 2*cfg.DatabaseTimeout)
}

func runWorkerProbe(env Env, ready bool, now time.Time) error {
	unhealthy := func(format string, args ...any) error {
		fmt.Fprintln(env.Stderr, "unhealthy: "+fmt.Sprintf(format, args...))
		return exitError{Code: 1}
	}
	cfg, err := settings.LoadWorker(env.Lookup)
	if err != nil {
		return unhealthy("the worker settings are invalid: %v", err)
	}
	path, variable := cfg.LivenessPath, "OCC_WORKER_LIVENESS_PATH"
	if ready {
		path, variable = cfg.ReadinessPath, "OCC_WORKER_READINESS_PATH"
	}
	if path == "" {
		return unhealthy("%s is not set", variable)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return unhealthy("the marker %s cannot be read", path)
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return unhealthy("the marker %s does not hold a timestamp", path)
	}
	age := now.Sub(time.UnixMilli(ms))
	if limit := markerStaleAfter(cfg); age > limit {
		return unhealthy("the marker %s is %s old (stale after %s)", path, age.Round(time.Second), limit)
	}
	return nil
}
