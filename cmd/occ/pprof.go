//go:build pprof

package main

import (
	"fmt"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on http.DefaultServeMux
	"os"
)

// A profiling build (go build -tags pprof ./cmd/occ) serves net/http/pprof on OCC_PPROF_ADDR
// (for example 127.0.0.1:6060) in every process that has it set. Release builds have no such
// listener: docs/performance.md ("Profiles: where a Namespace pass and an authorized read spend their
// time") says how the findings were taken.
func init() {
	addr := os.Getenv("OCC_PPROF_ADDR")
	if addr == "" {
		return
	}
	go func() {
		if err := http.ListenAndServe(addr, nil); err != nil {
			fmt.Fprintln(os.Stderr, "occ: pprof listener:", err)
		}
	}()
}
