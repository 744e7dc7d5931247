package console

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"strconv"
	"strings"
)

//go:embed web
var files embed.FS

// Paths the console owns on the API's listener.
const (
	// Prefix is the console's root: every page lives below it.
	Prefix = "/console/"
	// AssetsPrefix is where the hashed assets are served.
	AssetsPrefix = Prefix + "assets/"
)

// SecurityHeaders are sent with every console response. The policy admits this origin only: no
// inline script or style, no plugins, no framing by anyone, forms posting here only.
var SecurityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
		"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
	"X-Content-Type-Options":     "nosniff",
	"Referrer-Policy":            "no-referrer",
	"X-Frame-Options":            "DENY",
	"Cross-Origin-Opener-Policy": "same-origin",
}

// Options configure the console.
type Options struct {
	// Version is the running build's version, shown in the sidebar with ?debug=true.
	Version string
}

// Handler serves the console: "/" and "/console" redirect to "/console/", hashed assets below
// "/console/assets/", and the HTML shell for every other path below "/console/" (the pages are
// routed in the browser).
type Handler struct {
	assets *assetSet
	shell  []byte
}

// Owns reports whether the console answers the escaped request path.
func Owns(path string) bool {
	return path == "/" || path == "/console" || strings.HasPrefix(path, Prefix)
}

// New builds the asset set and the HTML shell once.
func New(opts Options) (*Handler, error) {
	set, err := buildAssets(files, "web/assets")
	if err != nil {
		return nil, err
	}
	page, err := template.New("index.html").Funcs(template.FuncMap{
		"asset": func(logical string) (string, error) {
			a, ok := set.byLogical[logical]
			if !ok {
				return "", &missingAssetError{logical}
			}
			return AssetsPrefix + a.name, nil
		},
	}).ParseFS(files, "web/index.html")
	if err != nil {
		return nil, err
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	var preload []string
	for _, m := range set.modules() {
		preload = append(preload, AssetsPrefix+m)
	}
	var buf bytes.Buffer
	if err := page.Execute(&buf, map[string]any{"Version": version, "Modules": preload}); err != nil {
		return nil, err
	}
	return &Handler{assets: set, shell: buf.Bytes()}, nil
}

type missingAssetError struct{ name string }

func (e *missingAssetError) Error() string {
	return "console: the shell names a missing asset " + e.name
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	header := w.Header()
	for k, v := range SecurityHeaders {
		header.Set(k, v)
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		header.Set("Allow", "GET, HEAD")
		plain(w, http.StatusMethodNotAllowed, "Method not allowed.")
		return
	}
	p := r.URL.EscapedPath()
	switch {
	case p == "/" || p == "/console":
		target := Prefix
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		header.Set("Cache-Control", "no-store")
		header.Set("Location", target)
		w.WriteHeader(http.StatusFound)
	case strings.HasPrefix(p, AssetsPrefix):
		h.serveAsset(w, r, strings.TrimPrefix(p, AssetsPrefix))
	case strings.HasPrefix(p, Prefix):
		header.Set("Content-Type", "text/html; charset=utf-8")
		header.Set("Cache-Control", "no-store")
		header.Set("Content-Length", strconv.Itoa(len(h.shell)))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(h.shell)
		}
	default:
		plain(w, http.StatusNotFound, "Not found.")
	}
}

func (h *Handler) serveAsset(w http.ResponseWriter, r *http.Request, name string) {
	a, ok := h.assets.byHashed[name]
	if !ok {
		plain(w, http.StatusNotFound, "Not found.")
		return
	}
	header := w.Header()
	header.Set("Content-Type", a.contentType)
	// The name changes with the content, so a cached copy is never stale.
	header.Set("Cache-Control", "public, max-age=31536000, immutable")
	header.Set("Vary", "Accept-Encoding")
	body := a.body
	if a.gzipped != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		header.Set("Content-Encoding", "gzip")
		body = a.gzipped
	}
	header.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

// acceptsGzip reports whether an Accept-Encoding value admits gzip (a q of 0 refuses it).
func acceptsGzip(v string) bool {
	for _, part := range strings.Split(v, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		key, value, found := strings.Cut(strings.TrimSpace(params), "=")
		if !found || strings.TrimSpace(key) != "q" {
			return true
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		return err == nil && q > 0
	}
	return false
}

func plain(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(text + "\n"))
}
