package console

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

func newHandler(t *testing.T) *Handler {
	t.Helper()
	h, err := New(Options{Version: "v1.2.3-test"})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func get(t *testing.T, h http.Handler, method, target string, header map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		rd = zr
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// paths returns one URL of every kind of console response: redirects, the shell, every asset,
// an unknown asset and a refused method.
func paths(h *Handler) []string {
	out := []string{"/", "/console", "/console/", "/console/agents/agt_x?namespace=ns_y", "/console/assets/nope.js"}
	for name := range h.assets.byHashed {
		out = append(out, AssetsPrefix+name)
	}
	return out
}

// TestEveryResponseCarriesTheSecurityHeaders: CSP, nosniff and no-referrer on every answer.
func TestEveryResponseCarriesTheSecurityHeaders(t *testing.T) {
	h := newHandler(t)
	check := func(method, target string) {
		r := get(t, h, method, target, nil)
		for k, v := range SecurityHeaders {
			if got := r.Header.Get(k); got != v {
				t.Errorf("%s %s: %s = %q, want %q", method, target, k, got, v)
			}
		}
	}
	for _, p := range paths(h) {
		check(http.MethodGet, p)
		check(http.MethodHead, p)
	}
	check(http.MethodPost, "/console/agents")
	csp := SecurityHeaders["Content-Security-Policy"]
	for _, want := range []string{"default-src 'self'", "frame-ancestors 'none'", "object-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP lacks %s", want)
		}
	}
	if strings.Contains(csp, "unsafe-") {
		t.Errorf("CSP allows something unsafe: %s", csp)
	}
}

// externalURL matches a scheme-qualified or protocol-relative URL.
var externalURL = regexp.MustCompile(`(?i)\b(https?|wss?|ftp):|["'(=\s]//[a-z0-9]`)

// TestServedFilesNameNoExternalURL: nothing the console serves can make the browser reach
// another origin. The SVG namespace name is an identifier, not a request.
func TestServedFilesNameNoExternalURL(t *testing.T) {
	h := newHandler(t)
	for _, p := range paths(h) {
		r := get(t, h, http.MethodGet, p, map[string]string{"Accept-Encoding": "gzip"})
		text := strings.ReplaceAll(body(t, r), `xmlns="http://www.w3.org/2000/svg"`, "")
		if loc := externalURL.FindStringIndex(text); loc != nil {
			t.Errorf("%s names an external URL near %q", p, text[max(0, loc[0]-40):min(len(text), loc[1]+40)])
		}
	}
	// The check itself finds what it must.
	for _, bad := range []string{`import x from "https://cdn.example/x.js"`, `url(//fonts.example/a.woff)`, `src="//evil.example"`} {
		if !externalURL.MatchString(bad) {
			t.Errorf("the check misses %s", bad)
		}
	}
}

func TestShellAndCaching(t *testing.T) {
	h := newHandler(t)
	r := get(t, h, http.MethodGet, "/console/agents?namespace=ns_1", nil)
	shell := body(t, r)
	if r.StatusCode != 200 || r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("shell: %d %v", r.StatusCode, r.Header)
	}
	if !strings.Contains(shell, `<meta name="occ-version" content="v1.2.3-test">`) {
		t.Fatalf("the shell does not carry the version:\n%s", shell)
	}
	if strings.Contains(shell, "<style") || strings.Contains(shell, " style=") || regexp.MustCompile(`<script(?:[^>]*)>[^<]`).MatchString(shell) {
		t.Fatal("the shell has inline style or script")
	}
	refs := regexp.MustCompile(`(?:href|src)="(/console/assets/[^"]+)"`).FindAllStringSubmatch(shell, -1)
	if len(refs) < 3 {
		t.Fatalf("the shell names %d assets", len(refs))
	}
	for _, m := range refs {
		a := get(t, h, http.MethodGet, m[1], map[string]string{"Accept-Encoding": "gzip, deflate"})
		if a.StatusCode != 200 || a.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("%s: %d %q", m[1], a.StatusCode, a.Header.Get("Cache-Control"))
		}
		if !regexp.MustCompile(`\.[0-9a-f]{10}\.[a-z]+$`).MatchString(m[1]) {
			t.Errorf("%s is not content-hashed", m[1])
		}
	}
	if r := get(t, h, http.MethodGet, "/console?namespace=x", nil); r.StatusCode != http.StatusFound || r.Header.Get("Location") != "/console/?namespace=x" {
		t.Fatalf("/console: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	if r := get(t, h, http.MethodGet, "/", nil); r.StatusCode != http.StatusFound || r.Header.Get("Location") != "/console/" {
		t.Fatalf("/: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	if r := get(t, h, http.MethodDelete, "/console/", nil); r.StatusCode != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("DELETE: %d", r.StatusCode)
	}
	if r := get(t, h, http.MethodGet, "/console/assets/js/main.js", nil); r.StatusCode != 404 {
		t.Fatalf("an unhashed name is served: %d", r.StatusCode)
	}
}

// TestReferencesAreRewrittenToHashedNames: every import of every module names a served asset,
// and changing one module changes the name of the modules importing it.
func TestReferencesAreRewrittenToHashedNames(t *testing.T) {
	h := newHandler(t)
	spec := regexp.MustCompile(`(?m)^import\s+(?:[^'"\n]*?\sfrom\s*)?["']([^"']+)["']`)
	for name, a := range h.assets.byHashed {
		if !strings.HasSuffix(name, ".js") {
			continue
		}
		for _, m := range spec.FindAllStringSubmatch(string(a.body), -1) {
			target := resolve(name, m[1])
			if _, ok := h.assets.byHashed[target]; !ok {
				t.Errorf("%s imports %s, which is not served", name, m[1])
			}
		}
	}
	fs := fstest.MapFS{
		"a/x.js":      {Data: []byte(`import { y } from './y.js';`)},
		"a/y.js":      {Data: []byte(`export const y = 1;`)},
		"a/css/s.css": {Data: []byte(`.i { background: url(../i.svg); }`)},
		"a/i.svg":     {Data: []byte(`<svg/>`)},
	}
	first, err := buildAssets(fs, "a")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(first.byLogical["css/s.css"].body), "url(../"+strings.TrimPrefix(first.byLogical["i.svg"].name, "")+")") {
		t.Fatalf("css reference: %s", first.byLogical["css/s.css"].body)
	}
	fs["a/y.js"] = &fstest.MapFile{Data: []byte(`export const y = 2;`)}
	second, err := buildAssets(fs, "a")
	if err != nil {
		t.Fatal(err)
	}
	if first.byLogical["x.js"].name == second.byLogical["x.js"].name {
		t.Fatal("the importer kept its name when its import changed")
	}
	for name, bad := range map[string]fstest.MapFS{
		"cycle":    {"a/x.js": {Data: []byte(`import './y.js';`)}, "a/y.js": {Data: []byte(`import './x.js';`)}},
		"missing":  {"a/x.js": {Data: []byte(`import './z.js';`)}},
		"absolute": {"a/x.js": {Data: []byte(`import 'https://cdn.example/z.js';`)}},
	} {
		if _, err := buildAssets(bad, "a"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func resolve(from, spec string) string {
	dir := from[:max(0, strings.LastIndex(from, "/"))]
	parts := strings.Split(dir, "/")
	if dir == "" {
		parts = nil
	}
	for _, seg := range strings.Split(spec, "/") {
		switch seg {
		case ".":
		case "..":
			parts = parts[:len(parts)-1]
		default:
			parts = append(parts, seg)
		}
	}
	return strings.Join(parts, "/")
}

func TestAcceptsGzip(t *testing.T) {
	for v, want := range map[string]bool{"gzip": true, "gzip, br": true, "br;q=1, gzip;q=0.5": true, "gzip;q=0": false, "gzip;q=0.0": false, "identity": false, "": false} {
		if acceptsGzip(v) != want {
			t.Errorf("%q: %v", v, !want)
		}
	}
}
