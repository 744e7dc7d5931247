package main_test

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/openclaw/occ/internal/testkit/wait"
)

// TestConsoleMeasure measures the console in the test browser and prints the figures of
// docs/performance.md: bytes transferred for the first load with an empty cache and again with
// a warm one, and the time from navigation to a rendered list of 1 000 Agents. It is a
// measurement, not an assertion about speed: run it with `make console-measure`
// (OCC_CONSOLE_MEASURE=1); otherwise it does not run.
func TestConsoleMeasure(t *testing.T) {
	if os.Getenv("OCC_CONSOLE_MEASURE") != "1" {
		t.Skip("a measurement: run it with make console-measure (OCC_CONSOLE_MEASURE=1)")
	}
	chromiumPath(t)
	stack := startConsoleStack(t, "{}")
	wait.Eventually(t, wait.Medium, "default namespace ready", func() bool { return stack.inst.status(t) == "ready" })
	ns := "/namespaces/" + stack.inst.defaultNS
	st, cfg := stack.api.call("POST", ns+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}})
	if st != 201 {
		t.Fatalf("configuration: %d", st)
	}
	const agents = 1000
	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if st, body := stack.api.call("POST", ns+"/agents", map[string]any{"name": fmt.Sprintf("agent-%04d", i),
					"configurationId": data(cfg)["id"], "harnessAuth": map[string]any{"method": "runtime"}}); st != 201 {
					t.Errorf("agent %d: %d %v", i, st, body)
				}
			}
		}()
	}
	for i := range agents {
		work <- i
	}
	close(work)
	wg.Wait()

	b := newBrowser(t, stack.base, 1280, 800)
	transferred := `(() => { const nav = performance.getEntriesByType('navigation')[0];
	  return nav.transferSize + performance.getEntriesByType('resource').reduce((n, r) => n + r.transferSize, 0); })()`
	b.open("/console/login")
	b.waitFor("the sign-in form", hasText("h1", "Sign in"))
	cold := eval[int](b, transferred)
	b.open("/console/login")
	b.waitFor("the sign-in form", hasText("h1", "Sign in"))
	warm := eval[int](b, transferred)
	b.signIn(adminEmail, adminPassword)
	b.waitFor("signed in", hasText("h1", "Agents"))

	var renders []float64
	var apiBytes int
	for range 5 {
		b.open("/console/agents?namespace=" + stack.inst.defaultNS)
		b.waitFor("1 000 rows", fmt.Sprintf(`document.querySelectorAll('.list-region tbody tr').length === %d && performance.getEntriesByName('occ:agents-rendered').length > 0`, agents))
		renders = append(renders, eval[float64](b, `performance.getEntriesByName('occ:agents-rendered')[0].startTime`))
		apiBytes = eval[int](b, `performance.getEntriesByType('resource').filter((r) => r.initiatorType === 'fetch').reduce((n, r) => n + r.transferSize, 0)`)
	}
	best, worst := renders[0], renders[0]
	for _, r := range renders {
		best, worst = min(best, r), max(worst, r)
	}
	fmt.Printf("console first load (sign-in page, empty cache): %d bytes transferred\n", cold)
	fmt.Printf("console reload (warm cache): %d bytes transferred\n", warm)
	fmt.Printf("agents list of %d Agents: navigation to rendered rows %.0f ms (best of 5; worst %.0f ms); its API reads transferred %d bytes\n",
		agents, best, worst, apiBytes)
}
