package metrics

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Listener limits.
const (
	MaxConnections  = 16
	Timeout         = 5 * time.Second
	maxHeaderBytes  = 8 << 10
	shutdownTimeout = 5 * time.Second
)

// Handler serves g at GET /metrics: other paths 404, other methods 405, Cache-Control: no-store on
// every response. The whole response is rendered before anything is written, so a failed
// collection answers 503 with no metrics at all.
func Handler(g prometheus.Gatherer) http.Handler {
	return &handler{render: promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})}
}

type handler struct {
	render http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Path != "/metrics" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	buf := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
	h.render.ServeHTTP(buf, r)
	if buf.status != http.StatusOK {
		http.Error(w, "metrics unavailable", http.StatusServiceUnavailable)
		return
	}
	for _, k := range []string{"Content-Type", "Content-Encoding", "Vary"} {
		if v := buf.header.Values(k); len(v) > 0 {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.body.Bytes())
}

// bufferedResponse records a response in memory.
type bufferedResponse struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(status int) {
	if !b.wrote {
		b.status, b.wrote = status, true
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}

// Listener is a bound metrics listener. Create it with Listen (which fails on a bad or busy
// address), then run Serve.
type Listener struct {
	ln   net.Listener
	srv  *http.Server
	once sync.Once
}

// Listen binds addr (host:port) and prepares to serve h with the listener limits.
func Listen(addr string, h http.Handler) (*Listener, error) {
	return listen(addr, h, Timeout)
}

func listen(addr string, h http.Handler, timeout time.Duration) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Listener{
		ln: newLimitListener(ln, MaxConnections),
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: timeout,
			ReadTimeout:       timeout,
			WriteTimeout:      timeout,
			IdleTimeout:       timeout,
			MaxHeaderBytes:    maxHeaderBytes,
			// net/http's own diagnostics are free text; process output is JSON lines only.
			ErrorLog: log.New(io.Discard, "", 0),
		},
	}, nil
}

// Addr is the bound address (useful with port 0).
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Serve serves until ctx ends, then shuts down gracefully (in-flight scrapes get up to 5 s) and
// returns nil. It returns an error only when serving itself fails.
func (l *Listener) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- l.srv.Serve(l.ln) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := l.srv.Shutdown(sctx); err != nil {
			_ = l.srv.Close()
		}
		<-errc
		return nil
	}
}

// Close stops the listener at once, whether or not Serve runs.
func (l *Listener) Close() error {
	var err error
	l.once.Do(func() {
		err = l.srv.Close()
		_ = l.ln.Close()
	})
	return err
}

// Serve binds addr and serves h until ctx ends. A bind failure is returned at once; prefer Listen
// and Listener.Serve when startup must know that the address is bound before going on.
func Serve(ctx context.Context, addr string, h http.Handler) error {
	l, err := Listen(addr, h)
	if err != nil {
		return err
	}
	return l.Serve(ctx)
}

// limitListener keeps at most n connections open; a connection over the limit is closed as soon as
// it is accepted (like Node's server.maxConnections), so idle clients cannot queue scrapes forever.
type limitListener struct {
	net.Listener
	slots chan struct{}
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, n)}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitConn{Conn: c, release: sync.OnceFunc(func() { <-l.slots })}, nil
		default:
			_ = c.Close()
		}
	}
}

type limitConn struct {
	net.Conn
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
