package kube

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultRequestTimeout bounds every request (upstream KUBERNETES_REQUEST_TIMEOUT_MS: 10 s).
const DefaultRequestTimeout = 10 * time.Second

// maxResponseBytes bounds a response body; lists of one namespace's owned objects stay far below.
const maxResponseBytes = 32 << 20

// Read retry schedule: up to 6 attempts, exponential from 50 ms with jitter, at most 2 s per wait
// and 2 s in total, honouring Retry-After on 429 and 503.
const (
	readAttempts   = 6
	retryBase      = 50 * time.Millisecond
	retryMaxWait   = 2 * time.Second
	retryMaxBudget = 2 * time.Second
)

// Options configure a Client.
type Options struct {
	Auth Auth
	// Env reads KUBERNETES_SERVICE_HOST/PORT for the in-cluster mode.
	Env Environment
	// FieldManager names the server-side apply field manager.
	FieldManager string
	// RequestTimeout bounds each request; 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// WrapTransport, when set, wraps the HTTP transport (as client-go's rest.Config does); the
	// driver tests count the requests of a pass with it.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// AuthWarmup is how long after a request that got no answer a 401 or 403 counts as the
	// server's warm-up (APIError.AfterOutage); 0 means DefaultAuthWarmup.
	AuthWarmup time.Duration
}

// DefaultAuthWarmup: a kube-apiserver that has just (re)started refuses every identity but its
// own loopback one with 403 (and may answer 401) until its authenticators and RBAC authorizer have
// loaded, which takes a few seconds.
const DefaultAuthWarmup = 30 * time.Second

// Client talks to one API server as one identity.
type Client struct {
	server       *url.URL
	http         *http.Client
	token        func() (string, error)
	fieldManager string
	timeout      time.Duration
	authWarmup   time.Duration
	// unanswered is when (Unix nanoseconds) a request last got no answer; 0: never.
	unanswered atomic.Int64
}

// New resolves the authentication and returns a client. It makes no request.
func New(opts Options) (*Client, error) {
	creds, err := opts.Auth.resolve(opts.Env)
	if err != nil {
		return nil, err
	}
	timeout := opts.RequestTimeout
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	warmup := opts.AuthWarmup
	if warmup <= 0 {
		warmup = DefaultAuthWarmup
	}
	transport := &http.Transport{
		TLSClientConfig:     creds.tlsConfig,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	var rt http.RoundTripper = transport
	if opts.WrapTransport != nil {
		rt = opts.WrapTransport(rt)
	}
	return &Client{
		server:       creds.server,
		http:         &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		token:        creds.token,
		fieldManager: opts.FieldManager,
		timeout:      timeout,
		authWarmup:   warmup,
	}, nil
}

// Host and Port name the API server (for KUBERNETES_API_UNAVAILABLE startup lines).
func (c *Client) Host() string { return c.server.Hostname() }

// Port is the API server's port (443 when the URL has none).
func (c *Client) Port() int {
	if p, err := strconv.Atoi(c.server.Port()); err == nil {
		return p
	}
	return 443
}

// APIError is a failure status from the API server.
type APIError struct {
	Status int
	// Reason is the Status object's reason (NotFound, Forbidden, Conflict, AlreadyExists, ...).
	Reason string
	// Message is the server's text; it can quote object contents, so it is for tests only: never
	// log it or return it to an API client.
	Message string
	// RetryAfter is the server's Retry-After on 429/503, 0 when absent.
	RetryAfter time.Duration
	// AfterOutage marks a 401 or 403 that came within the client's AuthWarmup of a request that
	// got no answer: most likely a restarted server that has not loaded its authorization yet, so
	// IsTransient reports it.
	AfterOutage bool
}

func (e *APIError) Error() string {
	s := "kube: HTTP " + strconv.Itoa(e.Status)
	if e.Reason != "" {
		s += " " + e.Reason
	}
	return s
}

// CodeTLSUntrusted is the TransportError code of a server certificate that does not verify
// against the configured CA (or does not name the server).
const CodeTLSUntrusted = "TLS_UNTRUSTED"

// TransportError is a request that got no answer: Code is a socket code (ECONNREFUSED,
// ECONNRESET, EHOSTUNREACH, ...), "TIMEOUT" when the deadline passed, CodeTLSUntrusted, or "EIO"
// otherwise.
type TransportError struct {
	Code string
	Err  error
}

func (e *TransportError) Error() string {
	return "kube: no answer from the API server (" + e.Code + ")"
}
func (e *TransportError) Unwrap() error { return e.Err }

// Timeout reports whether the request ran out of time.
func (e *TransportError) Timeout() bool { return e.Code == "TIMEOUT" }

// StatusOf returns the HTTP status of an *APIError in err's chain, 0 otherwise.
func StatusOf(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// ReasonOf returns the Status reason of an *APIError in err's chain, "" otherwise.
func ReasonOf(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Reason
	}
	return ""
}

// IsNotFound reports a 404.
func IsNotFound(err error) bool { return StatusOf(err) == http.StatusNotFound }

// IsConflict reports a 409 (an update lost a race, or a create found the name taken).
func IsConflict(err error) bool { return StatusOf(err) == http.StatusConflict }

// IsForbidden reports a 403.
func IsForbidden(err error) bool { return StatusOf(err) == http.StatusForbidden }

// IsTransient reports a self-clearing failure: no answer, HTTP 429 or 5xx, or a 401 or 403 just
// after an outage (APIError.AfterOutage). A server certificate that does not verify is not one:
// repeating the request cannot fix it.
func IsTransient(err error) bool {
	var te *TransportError
	if errors.As(err, &te) {
		return te.Code != CodeTLSUntrusted
	}
	var ae *APIError
	if errors.As(err, &ae) && ae.AfterOutage {
		return true
	}
	s := StatusOf(err)
	return s == http.StatusTooManyRequests || s >= 500
}

// Get reads one object into out (nil discards it). Reads are retried.
func (c *Client) Get(ctx context.Context, path string, out any) error {
	return c.read(ctx, path, nil, out)
}

// List reads a collection with an optional label selector into out.
func (c *Client) List(ctx context.Context, path string, labelSelector string, out any) error {
	q := url.Values{}
	if labelSelector != "" {
		q.Set("labelSelector", labelSelector)
	}
	return c.read(ctx, path, q, out)
}

// Apply sends obj as a server-side apply patch under the client's field manager (force false) and
// decodes the result into out. Writes are sent once: after a transport failure the outcome is
// unknown.
func (c *Client) Apply(ctx context.Context, path string, obj Object, out any) error {
	q := url.Values{"fieldManager": {c.fieldManager}, "force": {"false"}}
	return c.write(ctx, http.MethodPatch, path, q, "application/apply-patch+yaml", obj, out)
}

// strictWrite is the query of Create, Update and MergePatch: an unknown or duplicated field is
// refused with 400 (fieldValidation=Strict) instead of being dropped with a warning, so that a
// misspelt field in an object builder fails its test rather than silently doing nothing.
func (c *Client) strictWrite() url.Values {
	return url.Values{"fieldManager": {c.fieldManager}, "fieldValidation": {"Strict"}}
}

// Create POSTs obj to a collection.
func (c *Client) Create(ctx context.Context, collection string, obj Object, out any) error {
	return c.write(ctx, http.MethodPost, collection, c.strictWrite(), "application/json", obj, out)
}

// Update replaces an object (PUT); obj should carry metadata.resourceVersion so that a concurrent
// change is refused with 409.
func (c *Client) Update(ctx context.Context, path string, obj Object, out any) error {
	return c.write(ctx, http.MethodPut, path, c.strictWrite(), "application/json", obj, out)
}

// MergePatch applies a JSON merge patch.
func (c *Client) MergePatch(ctx context.Context, path string, patch Object, out any) error {
	return c.write(ctx, http.MethodPatch, path, c.strictWrite(), "application/merge-patch+json", patch, out)
}

// Delete deletes an object only when it still has uid (and resourceVersion, when given), with
// background propagation of its dependents. An absent object is not an error here: callers decide.
func (c *Client) Delete(ctx context.Context, path, uid, resourceVersion string) error {
	if uid == "" {
		return errors.New("kube: delete without a UID precondition")
	}
	pre := Object{"uid": uid}
	if resourceVersion != "" {
		pre["resourceVersion"] = resourceVersion
	}
	body := Object{"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": pre, "propagationPolicy": "Background"}
	return c.write(ctx, http.MethodDelete, path, nil, "application/json", body, nil)
}

// Query reads a path with the query parameters q (a field selector, a log read's options) into
// out; out may be a *[]byte for a body that is not JSON (pods/log). Reads are retried.
func (c *Client) Query(ctx context.Context, path string, q url.Values, out any) error {
	return c.read(ctx, path, q, out)
}

// RawGet reads a non-resource path such as /version.
func (c *Client) RawGet(ctx context.Context, path string, out any) error {
	return c.read(ctx, path, nil, out)
}

func (c *Client) read(ctx context.Context, path string, q url.Values, out any) error {
	start := time.Now()
	var err error
	for attempt := 1; ; attempt++ {
		err = c.do(ctx, http.MethodGet, path, q, "", nil, out)
		if err == nil || !IsTransient(err) || attempt == readAttempts || ctx.Err() != nil {
			return err
		}
		wait := retryBase << (attempt - 1)
		wait = wait/2 + rand.N(wait/2+1) // jitter
		var ae *APIError
		if errors.As(err, &ae) && ae.RetryAfter > 0 {
			wait = ae.RetryAfter
		}
		wait = min(wait, retryMaxWait)
		if time.Since(start)+wait > retryMaxBudget {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

func (c *Client) write(ctx context.Context, method, path string, q url.Values, contentType string, body any, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return c.do(ctx, method, path, q, contentType, raw, out)
}

func (c *Client) do(parent context.Context, method, path string, q url.Values, contentType string, body []byte, out any) error {
	if err := parent.Err(); err != nil {
		return err // the caller gave up: not the server's failure
	}
	ctx, cancel := context.WithTimeout(parent, c.timeout)
	defer cancel()
	u := *c.server
	u.Path = path
	u.RawQuery = q.Encode()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return err
	}
	if _, raw := out.(*[]byte); raw {
		req.Header.Set("Accept", "application/json, */*") // a text body; a failure is still a Status
	} else {
		req.Header.Set("Accept", "application/json")
	}
	req.Header.Set("User-Agent", "occ")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	token, err := c.token()
	if err != nil {
		return &TransportError{Code: "TOKEN_UNREADABLE", Err: err}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if perr := parent.Err(); perr != nil {
			return perr
		}
		return c.unansweredError(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return c.unansweredError(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := apiError(resp, data)
		if e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden {
			last := c.unanswered.Load()
			e.AfterOutage = last != 0 && time.Since(time.Unix(0, last)) < c.authWarmup
		}
		return e
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*[]byte); ok {
		*raw = data
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &APIError{Status: resp.StatusCode, Reason: "InvalidResponse", Message: "response body is not the expected JSON"}
	}
	return nil
}

func apiError(resp *http.Response, body []byte) *APIError {
	var st struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(body, &st)
	e := &APIError{Status: resp.StatusCode, Reason: st.Reason, Message: st.Message}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		if s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && s > 0 {
			e.RetryAfter = time.Duration(s) * time.Second
		}
	}
	return e
}

// unansweredError is transportError, remembering when the server last failed to answer (a
// certificate that does not verify is an answer, just not a trusted one).
func (c *Client) unansweredError(ctx context.Context, err error) error {
	err = transportError(ctx, err)
	var te *TransportError
	if errors.As(err, &te) && te.Code != CodeTLSUntrusted {
		c.unanswered.Store(time.Now().UnixNano())
	}
	return err
}

// transportError names a failure without an answer by its socket code.
func transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &TransportError{Code: "TIMEOUT", Err: err}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &TransportError{Code: "TIMEOUT", Err: err}
	}
	if errors.Is(err, context.Canceled) {
		return err // the caller's cancellation, not the server's
	}
	var (
		cve *tls.CertificateVerificationError
		uae x509.UnknownAuthorityError
		he  x509.HostnameError
		cie x509.CertificateInvalidError
	)
	if errors.As(err, &cve) || errors.As(err, &uae) || errors.As(err, &he) || errors.As(err, &cie) {
		return &TransportError{Code: CodeTLSUntrusted, Err: err}
	}
	for _, c := range []struct {
		errno syscall.Errno
		code  string
	}{
		{syscall.ECONNREFUSED, "ECONNREFUSED"}, {syscall.ECONNRESET, "ECONNRESET"},
		{syscall.EHOSTUNREACH, "EHOSTUNREACH"}, {syscall.ENETUNREACH, "ENETUNREACH"},
		{syscall.EPIPE, "EPIPE"}, {syscall.ECONNABORTED, "ECONNABORTED"},
	} {
		if errors.Is(err, c.errno) {
			return &TransportError{Code: c.code, Err: err}
		}
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return &TransportError{Code: "ENOTFOUND", Err: err}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &TransportError{Code: "ECONNRESET", Err: err}
	}
	return &TransportError{Code: "EIO", Err: err}
}
