package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/obs"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/preset"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/schema"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/store"
)

// Recorder receives one observation per answered request (occ_http_requests_total and
// occ_http_request_duration_seconds). route is the template or "unmatched"; method is one of GET,
// HEAD, POST, PUT, PATCH, DELETE, OPTIONS or OTHER. Health endpoints and aborted requests are not
// recorded.
type Recorder interface {
	ObserveRequest(route, method string, status int, d time.Duration)
}

// Config is what the API server needs. Pool is the application role's pool; ReadPool holds the
// same role's connections whose sessions are read-only (ReadPoolConfig).
type Config struct {
	Pool     *pgxpool.Pool
	ReadPool *pgxpool.Pool
	Mode     settings.Mode
	// AuthSecret keys session keys (OCC_AUTH_SECRET).
	AuthSecret string
	// AuthBaseURL is the normalized origin of OCC_AUTH_BASE_URL: the trusted browser Origin; an
	// https origin makes the session cookie Secure.
	AuthBaseURL string
	// IAMDriverID is the operator's id of the selected (native) IAM driver.
	IAMDriverID string
	// AdoptsExistingNamespaces is true when the selected Compute Driver can adopt an operator's
	// Kubernetes namespace (existingNamespace); otherwise such creates answer 409.
	AdoptsExistingNamespaces bool
	// TrustedBridge (development) admits one CIDR besides loopback; see
	// OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR.
	TrustedBridge netip.Prefix
	// Logger writes http.completed and the other API events; nil discards.
	Logger *slog.Logger
	// Metrics records requests; nil records nothing.
	Metrics Recorder
	// Now is the clock of the password sign-in budgets; nil is time.Now.
	Now func() time.Time
	// ShutdownTimeout bounds the drain of in-flight requests (default 10 s).
	ShutdownTimeout time.Duration
	// Compute is the selected Compute Driver: deploy asks it whether it supports the Agent's
	// Harness authentication and pins its {id, implementation} in the revision. Nil refuses
	// deployments with 503.
	Compute driver.Compute
	// Configurations stores Configuration values; nil answers Configuration writes and deploys
	// with 503.
	Configurations driver.Configuration
	// Secrets stores Secret values; nil answers Secret writes with 503.
	Secrets driver.Secret
	// ObservabilityURL is the startup YAML's observability.url (GET /observability); empty: unset.
	ObservabilityURL string
	// Console serves the web console on "/", "/console" and "/console/…"; nil serves none.
	Console http.Handler
	// Version is the build version GET /healthz reports (occ version prints it).
	Version string
	// Presets are the Installation's default Presets (presets.includeDefaults and presets.files):
	// New adds the missing ones to every provisioning and ready Namespace, a Namespace create
	// copies them in its transaction, and a Namespace deletion removes the unchanged copies.
	Presets []preset.Definition
	// SignIn configures external sign-in, the recovery account, trusted proxies and CLI
	// sessions; the zero value is password sign-in only.
	SignIn SignIn
}

// Server is the HTTP API of one Installation.
type Server struct {
	cfg          Config
	pool         *pgxpool.Pool
	readPool     *pgxpool.Pool
	installation store.Installation
	admitter     *auth.Admitter
	cookies      auth.Cookies
	appender     *audit.Appender
	router       *router
	log          *slog.Logger
	openapi      []byte
	dummyHash    string
	// hashSlots bounds concurrent argon2id work (about 19 MiB each) across all sign-ins and
	// account creations, so parallel requests cannot exhaust memory.
	hashSlots   chan struct{}
	signInState *signInState
	// runtimeGate bounds the runtime views' reads of each principal and of the replica.
	runtimeGate *runtimeGate
	// decisions are the authorization decisions this process reuses while the policy epoch the
	// request reads with its identity is unchanged (decision 42).
	decisions *iam.DecisionCache
}

// decisionCacheLimit bounds the decisions one API process keeps: a decision is a few hundred
// bytes, so the cache stays under a few tens of MiB.
const decisionCacheLimit = 65536

// maxConcurrentHashes bounds concurrent password hashing and verification.
const maxConcurrentHashes = 16

// withHashSlot runs f while holding one of the password-hashing slots.
func (s *Server) withHashSlot(ctx context.Context, f func()) error {
	select {
	case s.hashSlots <- struct{}{}:
	case <-ctx.Done():
		return platform.Unavailable(ctx.Err())
	}
	defer func() { <-s.hashSlots }()
	f()
	return nil
}

// ErrNotBootstrapped is returned by New when the database holds no Installation.
var ErrNotBootstrapped = errors.New("api: the Installation is not bootstrapped")

// New loads the Installation and prepares the server. It fails with ErrNotBootstrapped before
// bootstrap, and when the persisted IAM policy is empty.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Pool == nil || cfg.ReadPool == nil {
		return nil, errors.New("api: no database pool")
	}
	if cfg.IAMDriverID == "" {
		return nil, errors.New("api: no IAM driver id")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	inst, err := store.GetInstallation(ctx, cfg.Pool)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotBootstrapped
	} else if err != nil {
		return nil, fmt.Errorf("api: reading the Installation: %w", err)
	}
	if readOnly, err := store.SessionReadOnly(ctx, cfg.ReadPool); err != nil {
		return nil, fmt.Errorf("api: checking the read pool: %w", err)
	} else if !readOnly {
		return nil, errors.New("api: the read pool's sessions are not read-only (ReadPoolConfig)")
	}
	nonEmpty, err := store.IAMPolicyNonEmpty(ctx, cfg.Pool)
	if err != nil {
		return nil, fmt.Errorf("api: reading the IAM policy: %w", err)
	}
	if !nonEmpty {
		return nil, fmt.Errorf("%w: the IAM policy is empty", ErrNotBootstrapped)
	}
	// A hash to verify against when the email is unknown, so both failures cost the same.
	dummy, err := auth.HashPassword("occ-uniform-timing-placeholder")
	if err != nil {
		return nil, err
	}
	prepareRoutes()
	signInState, err := newSignInState(cfg.SignIn)
	if err != nil {
		return nil, err
	}
	cookies := auth.Cookies{Secure: strings.HasPrefix(cfg.AuthBaseURL, "https://"), HostOnly: signInState.external(),
		Domain: cfg.SignIn.CookieDomain}
	s := &Server{
		cfg:          cfg,
		pool:         cfg.Pool,
		readPool:     cfg.ReadPool,
		installation: inst,
		admitter: &auth.Admitter{InstallationID: inst.ID, Secret: []byte(cfg.AuthSecret), Cookies: cookies,
			CLISessions: signInState.cfg.CLISessions, Providers: signInState.instances},
		cookies:     cookies,
		appender:    audit.NewAppender(inst.ID),
		router:      newRouter(routeTable),
		log:         cfg.Logger,
		dummyHash:   dummy,
		hashSlots:   make(chan struct{}, maxConcurrentHashes),
		signInState: signInState, runtimeGate: newRuntimeGate(),
		decisions: iam.NewDecisionCache(decisionCacheLimit),
	}
	if err := s.prepareSignIn(ctx); err != nil {
		return nil, err
	}
	if err := s.seedPresets(ctx); err != nil {
		return nil, err
	}
	s.openapi, err = json.Marshal(OpenAPIDocument())
	if err != nil {
		return nil, err
	}
	return s, nil
}

// InstallationID is the id of the served Installation.
func (s *Server) InstallationID() string { return s.installation.ID }

// Serve answers requests on ln until ctx ends, then stops accepting, drains in-flight requests for
// at most the shutdown timeout and returns. Requests are not cancelled by ctx: they finish.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		// Connection-level errors (bad TLS, broken clients) carry peer text: never logged.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	go s.sweepSignIn(ctx)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutdown.started")
	drain, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(drain); err != nil {
		_ = srv.Close()
		s.log.Error("shutdown.failed", "code", "SHUTDOWN_TIMEOUT")
		<-errc
		return err
	}
	<-errc
	s.log.Info("shutdown.completed")
	return nil
}

// ServeHTTP runs the request pipeline: route match (404/405), media type and size
// (415/413), credential admission (401), the Origin gate (403), schema validation (400), then the
// route's transaction: identity resolution and scope (403), the path Namespace (404),
// authorization (403, audited), and the handler (domain rules, mutation, audit, work).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	c := &call{s: s, r: r, requestID: platform.NewID(platform.PrefixRequest)}
	sw := &statusWriter{ResponseWriter: w}
	sw.Header().Set("X-Request-Id", c.requestID)
	label, metered := "unmatched", true
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error(obs.EventHTTPUnexpectedError, "requestId", c.requestID, "code", platform.CodeInternalError, "route", label)
			if !sw.wrote {
				s.writeError(sw, c, &platform.Error{Problem: problem.Problem{Code: platform.CodeInternalError, Message: platform.MessageInternalError}})
			}
		}
		elapsed := time.Since(start)
		s.log.Info("http.completed", "requestId", c.requestID, "method", r.Method, "route", label,
			"status", sw.status, "durationMs", elapsed)
		if metered && s.cfg.Metrics != nil && r.Context().Err() == nil {
			s.cfg.Metrics.ObserveRequest(label, metricMethod(r.Method), sw.status, elapsed)
		}
	}()

	if s.serveConsole(sw, r, c) {
		label = ConsoleRoute
		return
	}
	route, params, template, allowed := s.router.match(r.Method, r.URL.EscapedPath())
	if route == nil {
		if allowed != nil {
			label = template
			sw.Header().Set("Allow", strings.Join(allowed, ", "))
			s.writeError(sw, c, platform.NewError(platform.CodeMethodNotAllowed, "The method is not allowed on this path."))
			return
		}
		s.writeError(sw, c, platform.NotFound("No such route."))
		return
	}
	label, metered = route.Path, !route.Unmetered
	c.route, c.params = route, params
	if err := s.handle(r.Context(), c); err != nil {
		s.writeError(sw, c, s.classify(c, err))
		return
	}
	s.writeSuccess(sw, c)
}

// checkPathParams refuses, as a resource that does not exist, a path parameter its schema
// refuses. Every path parameter is an identifier: bytes that are not UTF-8 (the schema's patterns
// would read them as U+FFFD) name nothing.
func checkPathParams(route *Route, params map[string]string) *platform.Error {
	for name, param := range route.PathParams {
		if !utf8.ValidString(params[name]) {
			return platform.NotFound("The resource does not exist.")
		}
		v := &schema.Validation{}
		param.Validate(v, params[name], "")
		if len(v.Details) > 0 {
			return platform.NotFound("The resource does not exist.")
		}
	}
	return nil
}

func (s *Server) handle(ctx context.Context, c *call) error {
	route, r := c.route, c.r
	if err := checkPathParams(route, c.params); err != nil {
		return err
	}
	if err := s.checkNetwork(r); err != nil {
		return err
	}
	body, perr := readBody(r, route.bodyLimit())
	if perr != nil {
		return perr
	}

	// A remembered service key is confirmed by the route's first round trip (decision 48); an
	// answer decided before it confirms the key first, so a refused key is still the 401 that
	// Admit would have answered before anything else.
	if cred, hash, ok := s.rememberedKey(c); ok {
		c.cred, c.keyAhead = cred, hash
		err := s.admitted(ctx, c, body)
		if err != nil && c.keyAhead != nil {
			if aerr := s.admit(ctx, c); aerr != nil {
				return aerr
			}
		}
		return err
	}
	if err := s.admit(ctx, c); err != nil {
		return err
	}
	return s.admitted(ctx, c, body)
}

// rememberedKey is the request's remembered service key (auth.Admitter.RememberedKey) on a route
// that resolves an identity in its transaction or read: the key's read then travels with the
// identity lookup.
func (s *Server) rememberedKey(c *call) (auth.Credential, []byte, bool) {
	if c.route.Tx == TxNone || c.route.Scope == ScopeNone {
		return auth.Credential{}, nil, false
	}
	return s.admitter.RememberedKey(c.r, c.route.Auth)
}

// admit admits the request's credential (auth.Admitter.Admit) into c.cred.
func (s *Server) admit(ctx context.Context, c *call) error {
	cred, err := s.admitter.Admit(ctx, s.pool, c.r, c.route.Auth)
	c.keyAhead = nil
	var ended *auth.SessionEndedError
	if errors.As(err, &ended) {
		if err := s.endSession(ctx, c, ended); err != nil {
			return err
		}
		if c.route.Auth == auth.ModeSessionOptional {
			err = nil
		} else {
			err = &auth.AdmissionError{Message: "The session ended: its sign-in provider is no longer configured."}
		}
	}
	if err != nil {
		return admissionProblem(err)
	}
	c.cred = cred
	return nil
}

// admissionProblem is the answer to a refused credential (401, or 403) or a storage failure (503).
func admissionProblem(err error) error {
	var ae *auth.AdmissionError
	if errors.As(err, &ae) && ae.Forbidden {
		return platform.NewError(platform.CodeForbidden, ae.Message)
	} else if errors.As(err, &ae) {
		return platform.NewError(platform.CodeUnauthenticated, ae.Message)
	}
	return platform.Unavailable(err)
}

// admitted runs the rest of the pipeline for an admitted credential c.cred: the credential kind
// and Origin rules, query and body validation, then the route's handler, in its transaction.
func (s *Server) admitted(ctx context.Context, c *call, body []byte) error {
	route, r := c.route, c.r
	cred := c.cred
	if route.RefusesCLISession && cred.Kind == auth.KindCLISession {
		return platform.NewError(platform.CodeForbidden, "This operation requires a signed-in browser session or a service key.")
	}
	switch {
	case route.ExactOrigin:
		rule := auth.OriginCookieUnsafe
		if auth.SafeMethod(r.Method) {
			rule = auth.OriginBrowserRead
		}
		if auth.CheckOrigin(r.Header, s.cfg.AuthBaseURL, rule) != nil {
			return platform.NewError(platform.CodeForbidden, "The request origin is not trusted.")
		}
	case route.SignInOrigin:
		if auth.CheckOrigin(r.Header, s.cfg.AuthBaseURL, auth.OriginSignIn) != nil {
			return platform.NewError(platform.CodeForbidden, "The request origin is not trusted.")
		}
	case cred.Kind == auth.KindSession && !auth.SafeMethod(r.Method):
		if auth.CheckOrigin(r.Header, s.cfg.AuthBaseURL, auth.OriginCookieUnsafe) != nil {
			return platform.NewError(platform.CodeForbidden, "The request origin is not trusted.")
		}
	}

	var perr *platform.Error
	if route.OpenQuery {
		c.query = map[string]string{}
	} else if c.query, perr = decodeQuery(r.URL.RawQuery, route.Query); perr != nil {
		return perr
	}
	if c.body, perr = decodeBody(route.Body, body); perr != nil {
		return perr
	}

	if route.Tx == TxNone {
		return route.Handler(s, ctx, c)
	}
	run := func(db store.DBTX) error {
		c.bind(db)
		if c.keyAhead != nil {
			c.keyRead = store.GetLiveServiceKeyAhead(c.pipe, c.keyAhead)
		}
		if route.Scope != ScopeNone {
			if err := c.admitIdentity(ctx); err != nil {
				return err
			}
		}
		return route.Handler(s, ctx, c)
	}
	var err error
	if route.Tx == TxRead {
		err = s.read(ctx, run)
	} else {
		err = s.inTx(ctx, func(tx *store.PipelinedTx) error {
			if route.KeepsPolicy {
				tx.KeepPolicy()
			}
			return run(tx)
		})
	}
	c.settle(ctx, err)
	var d *denial
	if errors.As(err, &d) {
		if aerr := s.inTx(ctx, func(tx *store.PipelinedTx) error {
			_, err := s.appender.Append(ctx, tx.AtCommit(), d.event)
			return err
		}); aerr != nil {
			return platform.Unavailable(aerr)
		}
		return platform.NewError(platform.CodeForbidden, platform.MessageForbidden, d.details...)
	}
	return err
}

// read runs a read-only route's fn on one connection of the read pool, outside any transaction:
// each statement is its own read-only transaction with its own snapshot, as it is in a READ
// COMMITTED transaction, without the two round trips of BEGIN and COMMIT (decision 45).
func (s *Server) read(ctx context.Context, fn func(store.DBTX) error) error {
	conn, err := s.readPool.Acquire(ctx)
	if err != nil {
		return platform.Unavailable(err)
	}
	defer conn.Release()
	return fn(store.NewPipeline(conn))
}

// ReadPoolConfig returns a copy of the application role's pool configuration whose sessions start
// read-only (default_transaction_read_only=on): a read route that tried to write or lock a row
// would be refused by PostgreSQL, as it was in a READ ONLY transaction.
func ReadPoolConfig(pool *pgxpool.Config) *pgxpool.Config {
	read := pool.Copy()
	if read.ConnConfig.RuntimeParams == nil {
		read.ConnConfig.RuntimeParams = map[string]string{}
	}
	read.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	return read
}

// inTx runs fn in one write transaction (store.PipelinedTx). A failed COMMIT that may have
// committed is UNKNOWN_OUTCOME; any other storage failure is DEPENDENCY_UNAVAILABLE.
func (s *Server) inTx(ctx context.Context, fn func(*store.PipelinedTx) error) error {
	err := store.RunPipelined(ctx, s.pool, fn)
	var commit *store.CommitError
	if errors.As(err, &commit) && !store.CommitChangedNothing(commit.Err) {
		return &platform.Error{Problem: problem.Problem{Code: platform.CodeUnknownOutcome, Message: platform.MessageUnknownOutcome, Cause: commit.Err}}
	} else if commit != nil {
		return platform.Unavailable(commit.Err)
	}
	return err
}

// classify turns any handler error into the API error the client sees. Unclassified errors are
// dependency failures (fail closed); their cause is logged as a class, never sent.
func (s *Server) classify(c *call, err error) *platform.Error {
	var pe *platform.Error
	if !errors.As(err, &pe) {
		pe = platform.Unavailable(err)
	}
	if pe.Code == platform.CodeDependencyUnavailable || pe.Code == platform.CodeUnknownOutcome {
		attrs := []any{"requestId", c.requestID, "code", pe.Code, "dependency", "postgresql"}
		if cls := errorClass(pe.Cause); cls != "" {
			attrs = append(attrs, "errorClass", cls)
		}
		if c.route != nil {
			attrs = append(attrs, "route", c.route.Path)
		}
		s.log.Warn("http.dependency_unavailable", attrs...)
	}
	return pe
}

// errorClass names a failure without its text: the code PostgreSQL reported, or a coarse kind.
func errorClass(err error) string {
	if err == nil {
		return ""
	}
	class, reported := store.ServerErrorClass(err)
	switch {
	case reported:
		return class
	case errors.Is(err, context.DeadlineExceeded):
		return "TIMEOUT"
	case errors.Is(err, context.Canceled):
		return "CANCELED"
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return "NETWORK"
	}
	return "UNCLASSIFIED"
}

// checkNetwork applies the network rules that need no credential: in production, forwarded
// headers are refused (no trusted proxy is configured); in development only loopback and the
// trusted bridge CIDR are admitted.
func (s *Server) checkNetwork(r *http.Request) error {
	if s.cfg.Mode == settings.Production {
		if auth.ForwardedHeaderTrusted(s.cfg.SignIn.TrustedProxy, r) {
			return nil
		}
		for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip"} {
			if _, present := r.Header[h]; present {
				return platform.NewError(platform.CodeForbidden, "Forwarded headers are not accepted without a trusted proxy.")
			}
		}
		for h := range r.Header {
			if strings.HasPrefix(h, "X-Forwarded-") {
				return platform.NewError(platform.CodeForbidden, "Forwarded headers are not accepted without a trusted proxy.")
			}
		}
		return nil
	}
	if s.cfg.Mode != settings.Development {
		return nil
	}
	addrPort, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return nil // not a network listener (httptest handlers, in-process use)
	}
	addr := addrPort.Addr().Unmap()
	if addr.IsLoopback() || (s.cfg.TrustedBridge.IsValid() && s.cfg.TrustedBridge.Contains(addr)) {
		return nil
	}
	return platform.NewError(platform.CodeForbidden, "Development mode admits local traffic only.")
}

// Responses.

type meta struct {
	RequestID  string `json:"requestId"`
	NextCursor string `json:"nextCursor,omitempty"`
}

type successEnvelope struct {
	Data any  `json:"data"`
	Meta meta `json:"meta"`
}

type errorBody struct {
	Code    string           `json:"code"`
	Message string           `json:"message"`
	Details []problem.Detail `json:"details,omitempty"`
}

type errorEnvelope struct {
	Error errorBody `json:"error"`
	Meta  meta      `json:"meta"`
}

func setJSONHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
}

func (s *Server) writeSuccess(w http.ResponseWriter, c *call) {
	for _, ck := range c.cookies {
		http.SetCookie(w, ck)
	}
	if c.redirect != "" {
		w.Header().Set("Location", c.redirect)
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusFound)
		return
	}
	status := c.status
	if status == 0 {
		status = c.route.Success
	}
	if status == http.StatusNoContent {
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		return
	}
	var body []byte
	var err error
	if c.raw != nil && c.rawType != "" {
		// A download (runtime logs): its own type, saved rather than shown.
		h := w.Header()
		h.Set("Content-Type", c.rawType)
		h.Set("Content-Disposition", c.rawDisposition)
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(status)
		_, _ = w.Write(c.raw)
		return
	}
	if c.raw != nil {
		body = c.raw
	} else {
		body, err = json.Marshal(successEnvelope{Data: c.data, Meta: meta{RequestID: c.requestID, NextCursor: c.nextCursor}})
		if err != nil {
			s.log.Error(obs.EventHTTPUnexpectedError, "requestId", c.requestID, "code", platform.CodeInternalError, "route", c.route.Path)
			s.writeError(w, c, &platform.Error{Problem: problem.Problem{Code: platform.CodeInternalError, Message: platform.MessageInternalError}})
			return
		}
	}
	setJSONHeaders(w)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (s *Server) writeError(w http.ResponseWriter, c *call, e *platform.Error) {
	setJSONHeaders(w)
	if e.Status() == http.StatusTooManyRequests && e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(e.RetryAfter/time.Second)))
	}
	body, _ := json.Marshal(errorEnvelope{
		Error: errorBody{Code: e.Code, Message: e.Message, Details: e.Details},
		Meta:  meta{RequestID: c.requestID},
	})
	w.WriteHeader(e.Status())
	_, _ = w.Write(body)
}

// statusWriter remembers the status for the completion log.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(status int) {
	if !w.wrote {
		w.status, w.wrote = status, true
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}
