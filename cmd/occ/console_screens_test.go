package main_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/openclaw/occ/internal/testkit/wait"

	"github.com/chromedp/chromedp"
)

// screenshotDirVariable, when set, names where TestConsoleLayout writes the screenshots of
// docs/console.md (make screenshots sets it to docs/console).
const screenshotDirVariable = "OCC_CONSOLE_SCREENSHOTS"

// documented are the screenshots docs/console.md shows (a few, to keep the repository small).
var documented = map[string]bool{
	"agents-desktop": true, "agent-desktop": true, "create-agent-desktop": true, "namespaces-desktop": true, "audit-desktop": true,
	"agents-mobile": true, "agent-mobile": true, "menu-mobile": true, "sign-in-mobile": true,
}

// TestConsoleLayout renders every page at a desktop width and at 390 px: each shows its heading
// and nothing is wider than the viewport. With OCC_CONSOLE_SCREENSHOTS=<dir> it also saves a
// screenshot of each, for docs/console.md.
func TestConsoleLayout(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	stack := startConsoleStack(t, "{revisionReadyAfterMs: 300}")
	wait.Eventually(t, wait.Medium, "default namespace ready", func() bool { return stack.inst.status(t) == "ready" })
	agentID := seedAgents(t, stack)
	dir := os.Getenv(screenshotDirVariable)

	pages := []struct{ name, path, heading string }{
		{"sign-in", "/console/login", "Sign in"},
		{"agents", "/console/agents", "Agents"},
		{"agent", "/console/agents/" + agentID, "triage"},
		{"agent-versions", "/console/agents/" + agentID + "?tab=versions", "triage"},
		{"create-agent", "/console/agents/new", "Create an Agent"},
		{"namespaces", "/console/namespaces", "Namespaces"},
		{"secrets", "/console/secrets", "Secrets"},
		{"access", "/console/access", "Access"},
		{"audit", "/console/audit", "Audit"},
		{"people", "/console/people", "People"},
	}
	for _, size := range []struct {
		name          string
		width, height int
	}{{"desktop", 1280, 800}, {"mobile", 390, 844}} {
		b := newBrowser(t, stack.base, size.width, size.height)
		b.open("/console/agents")
		b.signIn(adminEmail, adminPassword)
		b.waitFor("signed in", hasText("h1", "Agents"))
		for _, p := range pages {
			if p.name == "sign-in" {
				continue
			}
			b.open(p.path + sep(p.path) + "namespace=" + stack.inst.defaultNS)
			b.waitFor(p.name+" heading", hasText("h1", p.heading))
			b.waitFor(p.name+" loaded", `![...document.querySelectorAll('[aria-busy=true], .loading')].length`)
			if p.name == "agent" {
				b.waitFor("deployment result", hasText(".deploy-result", "is active"))
			}
			checkWidth(t, b, size.name, p.name)
			if name := p.name + "-" + size.name; dir != "" && documented[name] {
				shoot(t, b, filepath.Join(dir, name+".png"))
			}
		}
		if size.name == "mobile" {
			// The menu opens the navigation on narrow screens.
			b.click("button.menu-toggle", "Menu")
			b.waitFor("the navigation", `document.querySelector('#sidebar').offsetParent !== null`)
			checkWidth(t, b, size.name, "menu")
			if dir != "" {
				shoot(t, b, filepath.Join(dir, "menu-mobile.png"))
			}
		}
		b.click("button", "Sign out")
		b.waitFor("sign-in", hasText("h1", "Sign in"))
		checkWidth(t, b, size.name, "sign-in")
		if name := "sign-in-" + size.name; dir != "" && documented[name] {
			shoot(t, b, filepath.Join(dir, name+".png"))
		}
	}
}

func sep(path string) string {
	for _, c := range path {
		if c == '?' {
			return "&"
		}
	}
	return "?"
}

func checkWidth(t *testing.T, b *browser, size, page string) {
	t.Helper()
	if over := eval[int](b, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
		wide := eval[string](b, `[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1).slice(-3).map((e) => e.tagName + '.' + e.className).join(', ')`)
		t.Errorf("%s %s: %d px wider than the viewport (%s)", page, size, over, wide)
	}
}

func shoot(t *testing.T, b *browser, path string) {
	t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// seedAgents creates, through the API, a Secret, a Configuration and two Agents, deploys the
// first and waits for it; it returns the deployed Agent's id.
func seedAgents(t *testing.T, stack consoleStack) string {
	t.Helper()
	ns := "/namespaces/" + stack.inst.defaultNS
	must := func(status int, want int, body map[string]any) map[string]any {
		t.Helper()
		if status != want {
			t.Fatalf("seed: %d %v", status, body)
		}
		return data(body)
	}
	must2 := func(want int) func(int, map[string]any) map[string]any {
		return func(st int, body map[string]any) map[string]any { return must(st, want, body) }
	}
	secret := must2(201)(stack.api.call("POST", ns+"/secrets", map[string]any{"name": "model-key", "value": "sk-seed"}))
	cfg := must2(201)(stack.api.call("POST", ns+"/configurations", map[string]any{"kind": "agent",
		"values": map[string]any{"agents": map[string]any{"defaults": map[string]any{"model": "openai/gpt-5"}}}}))
	harness := map[string]any{"method": "runtime"}
	agent := must2(201)(stack.api.call("POST", ns+"/agents", map[string]any{"name": "triage", "configurationId": cfg["id"], "harnessAuth": harness}))
	must2(201)(stack.api.call("POST", ns+"/agents", map[string]any{"name": "reviewer", "configurationId": cfg["id"], "executionMode": "dedicated",
		"harnessAuth": map[string]any{"method": "api_key", "source": map[string]any{"kind": "secret", "namespaceId": stack.inst.defaultNS, "id": secret["id"]}}}))
	rev := must2(202)(stack.api.call("POST", ns+"/agents/"+agent["id"].(string)+"/deploy", nil))
	wait.Eventually(t, wait.Long, "seeded deployment", func() bool {
		_, d := stack.api.call("GET", ns+"/agents/"+agent["id"].(string)+"/deployments/"+rev["id"].(string), nil)
		return data(d)["status"] == "succeeded"
	})
	return agent["id"].(string)
}
