package main_test

// Browser tests of the web console: Debian's Chromium, headless, driven with chromedp, against
// the real `occ api` and `occ worker` processes on a private PostgreSQL with the simulated
// Compute Driver. Without a browser they skip, except under CI=true where they fail.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/testkit/wait"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

const (
	adminEmail    = "admin@openclaw.local"
	adminPassword = "openclaw-development-password"
)

// chromiumPath finds the browser; under CI=true its absence fails the test.
func chromiumPath(t testing.TB) string {
	t.Helper()
	for _, candidate := range []string{os.Getenv("OCC_TEST_CHROMIUM"), "/usr/bin/chromium", "chromium", "chromium-browser"} {
		if candidate == "" {
			continue
		}
		if p, err := exec.LookPath(candidate); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("Chromium is not installed (apt-get install chromium); the console's browser tests cannot run")
	}
	t.Skip("Chromium is not installed (apt-get install chromium): the console's browser tests are not run")
	return ""
}

// consoleStack is a running installation: API (with the console) and one worker.
type consoleStack struct {
	inst   installation
	base   string
	api    apiClient
	worker *process
}

func startConsoleStack(t testing.TB, computeConfiguration string) consoleStack {
	t.Helper()
	tt := t.(*testing.T)
	inst := bootstrapped(tt)
	cfg := simulatedConfig(tt, computeConfiguration)
	worker := start(tt, workerEnv(inst, cfg, nil), "worker")
	port := freePort(tt)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	api := start(tt, map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": inst.db.AppURL, "OCC_CONFIG_PATH": cfg,
		"OCC_HOST": "127.0.0.1", "OCC_PORT": fmt.Sprint(port), "OCC_AUTH_BASE_URL": base}, "api")
	wait.Eventually(tt, wait.Medium, "api listening", func() bool { return len(api.events(false, "listening")) == 1 })
	return consoleStack{inst: inst, base: base, api: apiClient{t: tt, base: base, key: inst.serviceKey(tt)}, worker: worker}
}

// browser is one headless Chromium tab. Every JavaScript exception, console error and CSP
// violation is recorded, and a test fails when one happened.
type browser struct {
	t      testing.TB
	ctx    context.Context
	base   string
	mu     sync.Mutex
	errors []string
}

func newBrowser(t testing.TB, base string, width, height int) *browser {
	t.Helper()
	path := chromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(width, height), chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	b := &browser{t: t, ctx: ctx, base: base}
	onEvent := func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			b.record("exception: " + (&chromedp.ExceptionError{ExceptionDetails: e.ExceptionDetails}).Error())
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledType("error") {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				b.record("console.error: " + strings.Join(parts, " "))
			}
		case *log.EventEntryAdded:
			// 401s after an ended session and the 403/404/409s a test provokes are expected
			// network answers; script, CSP and other errors are not.
			if e.Entry.Level == log.EntryLevelError && e.Entry.Source != log.EntrySourceNetwork {
				b.record("log: " + e.Entry.Text)
			}
		}
	}
	if err := chromedp.Listen(ctx, onEvent); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("starting Chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("log domain: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		t.Fatalf("viewport: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.errors {
			t.Errorf("browser: %s", e)
		}
	})
	return b
}

func (b *browser) record(s string) {
	b.mu.Lock()
	b.errors = append(b.errors, s)
	b.mu.Unlock()
}

func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(what, err)
	}
}

func (b *browser) fail(what string, err error) {
	b.t.Helper()
	location, _ := chromedp.Run(b.ctx, chromedp.Location())
	body, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 3000) : ''`))
	b.t.Fatalf("%s: %v\nat %s\n%s", what, err, location, body)
}

func (b *browser) open(path string) {
	b.t.Helper()
	b.run("open "+path, chromedp.Navigate(b.base+path))
}

// waitFor polls a JavaScript expression until it is truthy.
func (b *browser) waitFor(what, expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(45*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		b.fail("wait for "+what, err)
	}
}

// eval evaluates a JavaScript expression into out's type.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.fail("evaluate "+expr, err)
	}
	return v
}

func jsString(s string) string { raw, _ := json.Marshal(s); return string(raw) }

// textIs is an expression: an element matching css whose trimmed text contains text.
func hasText(css, text string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%s)].some((e) => e.textContent.includes(%s))`, jsString(css), jsString(text))
}

// click clicks the first visible element matching css whose text contains text.
func (b *browser) click(css, text string) {
	b.t.Helper()
	b.waitFor(css+" "+text, fmt.Sprintf(`[...document.querySelectorAll(%s)].some((e) => e.textContent.includes(%s) && e.offsetParent !== null && !e.disabled)`, jsString(css), jsString(text)))
	eval[bool](b, fmt.Sprintf(`(() => { const e = [...document.querySelectorAll(%s)].find((e) => e.textContent.includes(%s) && e.offsetParent !== null && !e.disabled); e.scrollIntoView(); e.click(); return true; })()`,
		jsString(css), jsString(text)))
}

// fill types into the control labelled label (inside the open dialog when there is one).
func (b *browser) fill(label, value string) {
	b.t.Helper()
	sel := b.controlFor(label)
	eval[bool](b, fmt.Sprintf(`(() => { const e = document.querySelector(%s); e.value = ''; e.focus(); return true; })()`, jsString(sel)))
	b.run("fill "+label, chromedp.SendKeys(chromedp.CSS(sel), value))
}

// choose selects the option whose text contains text in the select labelled label.
func (b *browser) choose(label, text string) {
	b.t.Helper()
	sel := b.controlFor(label)
	b.waitFor("option "+text, fmt.Sprintf(`[...document.querySelector(%s).options].some((o) => o.textContent.includes(%s))`, jsString(sel), jsString(text)))
	eval[bool](b, fmt.Sprintf(`(() => { const s = document.querySelector(%s); const o = [...s.options].find((o) => o.textContent.includes(%s)); s.value = o.value; s.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`,
		jsString(sel), jsString(text)))
}

func (b *browser) controlFor(label string) string {
	b.t.Helper()
	expr := fmt.Sprintf(`(() => { const scope = document.querySelector('dialog[open]') || document;
	  const l = [...scope.querySelectorAll('label')].find((l) => l.textContent.replace(' *', '').trim() === %s && l.offsetParent !== null);
	  return l ? l.htmlFor : ''; })()`, jsString(label))
	b.waitFor("label "+label, expr)
	return "#" + eval[string](b, expr)
}

func (b *browser) signIn(email, password string) {
	b.t.Helper()
	b.waitFor("sign-in form", hasText("h1", "Sign in"))
	b.fill("Email", email)
	b.fill("Password", password)
	b.click("button", "Sign in")
}

// keys sends key presses to the focused element.
func (b *browser) keys(k string) { b.t.Helper(); b.run("keys", chromedp.KeyEvent(k)) }

// tabTo presses Tab until the focused element is the control labelled label (or the button
// with that text), as a keyboard user would.
func (b *browser) tabTo(label string) {
	b.t.Helper()
	expr := fmt.Sprintf(`(() => { const a = document.activeElement; if (!a) return false;
	  const t = %s; if ((a.tagName === 'BUTTON' || a.tagName === 'A') && a.textContent.trim() === t) return true;
	  return [...(a.labels || [])].some((l) => l.textContent.replace(' *', '').trim() === t); })()`, jsString(label))
	for range 80 {
		if eval[bool](b, expr) {
			return
		}
		b.keys(kb.Tab)
	}
	active := eval[string](b, `document.activeElement ? document.activeElement.outerHTML.slice(0, 200) : ''`)
	b.t.Fatalf("Tab never reached %q (focus on %s)", label, active)
}
