// Command benchall runs every benchmark of the repository and prints one table with every figure
// (name, value, unit): the Go micro-benchmarks of internal/iam and internal/queue, queuebench (OCC
// vs River), apiload, workerlatency and scalecheck, each as a subprocess writing -json; then the
// performance goals, each figure beside its anchor of the same run and the ratio. It needs only
// Go and the PostgreSQL server binaries (each tool starts its own private server).
//
//	make bench                      # from the repository root
//	cd bench && go run ./cmd/benchall
//	BENCH_FULL=1 make bench         # scalecheck at full size (10 000 Namespaces, 1 000 000 work rows)
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/openclaw/occ/bench/internal/figures"
	"github.com/openclaw/occ/bench/internal/stack"
)

var allSteps = []string{"gobench", "queuebench", "apiload", "workerlatency", "scalecheck"}

type config struct {
	full       bool
	steps      []string
	jsonOut    string
	queueN     int
	benchtime  string
	queueBench string
	apiArgs    string
	wlArgs     string
}

func main() {
	var c config
	var steps, skip string
	flag.BoolVar(&c.full, "full", os.Getenv("BENCH_FULL") == "1", "scalecheck at full size (default: BENCH_FULL=1 in the environment)")
	flag.StringVar(&steps, "only", strings.Join(allSteps, ","), "steps to run, in order: "+strings.Join(allSteps, ", "))
	flag.StringVar(&skip, "skip", "", "steps to leave out")
	flag.StringVar(&c.jsonOut, "json", "", "also write every figure as JSON to this file")
	flag.IntVar(&c.queueN, "queue-n", 20000, "queuebench -n")
	flag.StringVar(&c.benchtime, "benchtime", "1s", "go test -benchtime of internal/iam")
	flag.StringVar(&c.queueBench, "queue-benchtime", "2000x", "go test -benchtime of internal/queue")
	flag.StringVar(&c.apiArgs, "apiload-args", "", "extra flags for apiload (space-separated)")
	flag.StringVar(&c.wlArgs, "workerlatency-args", "", "extra flags for workerlatency (space-separated)")
	flag.Parse()
	for s := range strings.SplitSeq(steps, ",") {
		s = strings.TrimSpace(s)
		switch {
		case s == "" || slices.Contains(strings.Split(skip, ","), s):
		case slices.Contains(allSteps, s):
			c.steps = append(c.steps, s)
		default:
			fatal(fmt.Errorf("unknown step %q", s))
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, c); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "benchall:", err)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s benchall: "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

type stepResult struct {
	name    string
	elapsed time.Duration
	report  figures.Report
	err     error
}

func run(ctx context.Context, c config) error {
	dir, err := os.MkdirTemp("", "occ-benchall-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	// Build the tools and occ once.
	logf("building the bench tools and occ")
	build := exec.CommandContext(ctx, "go", "build", "-o", dir+string(os.PathSeparator), "./cmd/queuebench", "./cmd/apiload",
		"./cmd/workerlatency", "./cmd/scalecheck")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build the bench tools: %w", err)
	}
	occ, err := stack.Build(ctx, dir)
	if err != nil {
		return err
	}

	// Reduced: 3 000 queued items are enough for the claims of -n 200 (213 + 163 × 16).
	scaleArgs := []string{"-namespaces", "3000", "-bindings", "60000", "-terminal-work", "300000", "-n", "200"}
	scaleSize := "REDUCED size: 3 000 Namespaces, 30 000 Agents, 60 000 bindings, 300 000 terminal work rows, -n 200 (BENCH_FULL=1 for full size)"
	if c.full {
		scaleArgs = nil
		scaleSize = "FULL size: 10 000 Namespaces, 100 000 Agents, 200 000 bindings, 1 000 000 terminal work rows, -n 300"
	}
	var results []stepResult
	tool := func(name string, args ...string) stepResult {
		out := filepath.Join(dir, name+".json")
		cmd := exec.CommandContext(ctx, filepath.Join(dir, name), append(args, "-json", out)...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		r := stepResult{name: name}
		if r.err = cmd.Run(); r.err != nil {
			r.err = fmt.Errorf("%s: %w", strings.Join(append([]string{name}, args...), " "), r.err)
		}
		if rep, err := figures.Read(out); err == nil {
			r.report = rep
		} else if r.err == nil {
			r.err = err
		}
		return r
	}
	for _, step := range c.steps {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		logf("=== %s", step)
		start := time.Now()
		var r stepResult
		switch step {
		case "gobench":
			r = goBench(ctx, root, c)
		case "queuebench":
			r = tool("queuebench", "-n", strconv.Itoa(c.queueN), "-wal-breakdown=false")
		case "apiload":
			r = tool("apiload", append([]string{"-occ-binary", occ}, strings.Fields(c.apiArgs)...)...)
		case "workerlatency":
			r = tool("workerlatency", append([]string{"-occ-binary", occ}, strings.Fields(c.wlArgs)...)...)
		case "scalecheck":
			r = tool("scalecheck", scaleArgs...)
			r.report.Notes = append(r.report.Notes, scaleSize)
		}
		r.elapsed = time.Since(start)
		if r.err != nil {
			logf("%s failed after %s: %v", step, r.elapsed.Round(time.Second), r.err)
		} else {
			logf("%s done in %s", step, r.elapsed.Round(time.Second))
		}
		results = append(results, r)
	}

	host, _ := os.Hostname()
	fmt.Printf("\nbenchall %s: %d CPUs, %s, %s/%s, %s\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(),
		runtime.Version(), runtime.GOOS, runtime.GOARCH, host)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "name\tvalue\tunit")
	all := figures.Report{Tool: "benchall"}
	var failed []string
	for _, r := range results {
		for _, f := range r.report.Figures {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, format(f.Value), f.Unit)
			all.Figures = append(all.Figures, f)
		}
		for _, n := range r.report.Notes {
			all.Notes = append(all.Notes, r.name+": "+n)
		}
		all.Notes = append(all.Notes, fmt.Sprintf("%s: %s", r.name, r.elapsed.Round(time.Second)))
		if r.err != nil {
			failed = append(failed, r.err.Error())
		}
	}
	tw.Flush()
	fmt.Println()
	values := map[string]float64{}
	for _, f := range all.Figures {
		values[f.Name] = f.Value
	}
	printGoals(os.Stdout, evaluateGoals(values))
	fmt.Println()
	for _, n := range all.Notes {
		fmt.Println("note:", n)
	}
	if err := all.Write(c.jsonOut); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d step(s) failed:\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return nil
}

func format(v float64) string {
	switch {
	case v == float64(int64(v)) && v < 1e15:
		return strconv.FormatInt(int64(v), 10)
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/openclaw/occ").Output()
	if err != nil {
		return "", fmt.Errorf("locate the occ module: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// benchLine is one result line of `go test -bench`: name, iterations, then value/unit pairs.
var benchLine = regexp.MustCompile(`^(Benchmark\S+)\s+(\d+)\s+(.*)$`)

// goBench runs the Go micro-benchmarks of internal/iam and internal/queue in the main module.
func goBench(ctx context.Context, root string, c config) stepResult {
	r := stepResult{name: "gobench", report: figures.Report{Tool: "gobench"}}
	for _, pkg := range []struct{ path, benchtime string }{{"./internal/iam/", c.benchtime}, {"./internal/queue/", c.queueBench}} {
		cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", ".", "-benchmem", "-benchtime", pkg.benchtime, pkg.path)
		cmd.Dir = root
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			r.err = err
			return r
		}
		if err := cmd.Start(); err != nil {
			r.err = err
			return r
		}
		short := strings.Trim(strings.TrimPrefix(pkg.path, "./internal/"), "/")
		sc := bufio.NewScanner(io.TeeReader(stdout, os.Stderr))
		for sc.Scan() {
			m := benchLine.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			name := strings.TrimPrefix(m[1], "Benchmark")
			if i := strings.LastIndex(name, "-"); i > 0 {
				name = name[:i] // the GOMAXPROCS suffix
			}
			fields := strings.Fields(m[3])
			for i := 0; i+1 < len(fields); i += 2 {
				v, err := strconv.ParseFloat(fields[i], 64)
				if err != nil {
					continue
				}
				r.report.Add("go "+short+" "+name, v, fields[i+1])
			}
		}
		if err := cmd.Wait(); err != nil {
			r.err = fmt.Errorf("go test -bench %s: %w", pkg.path, err)
		}
	}
	r.report.Notes = append(r.report.Notes, fmt.Sprintf("go test -run '^$' -bench . -benchmem: internal/iam -benchtime %s, internal/queue -benchtime %s",
		c.benchtime, c.queueBench))
	return r
}
