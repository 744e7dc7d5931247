package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// The client commands talk to a running occ api. Every group carries the global options as
// persistent flags; a flag beats its environment variable, which beats the selected context of the
// config file (client_contexts.go).

const (
	defaultTimeoutSeconds = 30
	maxTimeoutSeconds     = 3600
	maxResponseBytes      = 16 << 20
	maxFileBytes          = 64 << 10
)

// Exit codes of the client commands: 1 for a refused request or an unreachable API, 2 for a
// command line refused locally (usage, malformed ids, unreadable files).
const (
	exitRequestFailed = 1
	exitUsage         = 2
)

// clientOptions are the global options of the client commands. The values are read back through
// setting, which knows whether a flag was given; the struct only anchors the flags.
type clientOptions struct {
	url, keyFile, namespace, caBundle, output, context string
	timeoutSeconds                                     int
	noHeaders                                          bool
}

// clientGroup returns a command group with the global client options as persistent flags.
func clientGroup(use, short string) (*cobra.Command, *clientOptions) {
	cmd := &cobra.Command{Use: use, Short: short}
	return cmd, addClientFlags(cmd)
}

// addClientFlags adds the global client options to cmd and its subcommands.
func addClientFlags(cmd *cobra.Command) *clientOptions {
	o := &clientOptions{}
	f := cmd.PersistentFlags()
	f.StringVar(&o.url, "url", "", "API origin, such as http://127.0.0.1:3000 (env OCC_URL)")
	f.StringVar(&o.keyFile, "service-key-file", "", "service key file: the issuance JSON with data.key (env OCC_SERVICE_KEY_FILE)")
	f.StringVarP(&o.namespace, "namespace", "n", "", "Namespace name or id (env OCC_NAMESPACE)")
	f.StringVar(&o.caBundle, "ca-bundle", "", "extra PEM root certificates for https (env OCC_CA_BUNDLE)")
	f.IntVar(&o.timeoutSeconds, "timeout-seconds", defaultTimeoutSeconds, "request timeout in seconds (env OCC_TIMEOUT_SECONDS)")
	f.StringVarP(&o.output, "output", "o", outputTable, "output format: table, wide, name, json or yaml")
	f.StringVar(&o.context, "context", "", "context of the config file to use (env OCC_CONTEXT)")
	f.BoolVar(&o.noHeaders, "no-headers", false, "print tables without their header line")
	registerClientFlagCompletion(cmd)
	return o
}

// clientSession is one resolved client invocation.
type clientSession struct {
	env  Env
	cmd  *cobra.Command
	base string
	// contextName is the context in use ("" when flags and environment say everything).
	contextName string
	creds       credentials
	// namespace is the resolved Namespace id of a command that needs one ("" otherwise; see
	// optionalNamespace). namespaceRef is what the user gave: a name or an id.
	namespace    string
	namespaceRef string
	output       string
	noHeaders    bool
	timeout      time.Duration
	http         *http.Client
}

// usageError prints a local refusal and returns exit status 2.
func usageError(env Env, format string, args ...any) error {
	fmt.Fprintln(env.Stderr, "Error: "+fmt.Sprintf(format, args...))
	return exitError{Code: exitUsage}
}

// requestError prints a failure that is not a usage mistake and returns exit status 1.
func requestError(env Env, format string, args ...any) error {
	fmt.Fprintln(env.Stderr, "Error: "+fmt.Sprintf(format, args...))
	return exitError{Code: exitRequestFailed}
}

// setting returns the flag's value when given on the command line, else the environment
// variable's, else the flag's default. The second result says whether the value was given.
func setting(env Env, cmd *cobra.Command, flag, variable string) (string, bool) {
	if f := cmd.Flags().Lookup(flag); f != nil && f.Changed {
		return f.Value.String(), true
	}
	if variable != "" {
		if v, ok := env.Lookup(variable); ok {
			return v, true
		}
	}
	if f := cmd.Flags().Lookup(flag); f != nil {
		return f.Value.String(), false
	}
	return "", false
}

// newClientSession resolves the global options. needNamespace requires a Namespace and resolves
// it (a name costs one request).
func newClientSession(env Env, cmd *cobra.Command, needNamespace bool) (*clientSession, error) {
	s, err := newUnauthenticatedSession(env, cmd)
	if err != nil {
		return nil, err
	}
	if s.creds == nil {
		where := "pass --service-key-file, set OCC_SERVICE_KEY_FILE, run occ login"
		if s.contextName != "" {
			where += ", or add one to the context " + s.contextName + " (occ config set-context " + s.contextName + " --service-key-file FILE)"
		} else {
			where += ", or select a context (occ config get-contexts; occ dev writes the context dev)"
		}
		return nil, usageError(env, "no credentials: %s.", where)
	}
	if needNamespace {
		if s.namespaceRef == "" {
			return nil, usageError(env, "this command needs a Namespace: pass --namespace NAME, set OCC_NAMESPACE, or give the context one (occ config set-context NAME --namespace NAME). List them with: occ namespace list")
		}
		if s.namespace, err = s.resolve(namespaceKind, s.namespaceRef); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// newUnauthenticatedSession resolves everything but requires no credentials: occ version reads
// the public /healthz with it.
func newUnauthenticatedSession(env Env, cmd *cobra.Command) (*clientSession, error) {
	s := &clientSession{env: env, cmd: cmd}
	s.output, _ = setting(env, cmd, "output", "") // no environment variable
	if !validOutput(s.output) {
		return nil, usageError(env, "--output must be table, wide, name, json or yaml.")
	}
	s.noHeaders, _ = strconv.ParseBool(flagValue(cmd, "no-headers"))

	selected, err := selectContext(env, cmd)
	if err != nil {
		return nil, err
	}
	s.contextName = selected.Name

	raw, given := setting(env, cmd, "url", "OCC_URL")
	if !given || raw == "" {
		raw = selected.URL
	}
	if raw == "" {
		return nil, usageError(env, "no API URL: pass --url, set OCC_URL, or select a context (occ config get-contexts; occ dev writes the context dev).")
	}
	if s.base, err = parseOrigin(raw); err != nil {
		return nil, usageError(env, "%v", err)
	}

	timeout, _ := setting(env, cmd, "timeout-seconds", "OCC_TIMEOUT_SECONDS")
	n, err := strconv.Atoi(timeout)
	if err != nil || n < 1 || n > maxTimeoutSeconds || strconv.Itoa(n) != timeout {
		return nil, usageError(env, "--timeout-seconds must be a whole number from 1 to %d.", maxTimeoutSeconds)
	}
	s.timeout = time.Duration(n) * time.Second

	if keyFile, given := setting(env, cmd, "service-key-file", "OCC_SERVICE_KEY_FILE"); given && keyFile != "" {
		if s.creds, err = loadServiceKeyCredentials(keyFile); err != nil {
			return nil, usageError(env, "%v", err)
		}
	} else if selected.Name != "" {
		if s.creds, err = selected.Credentials.load(); err != nil {
			return nil, usageError(env, "context %s: %v", selected.Name, err)
		}
	}
	// Without a service key, the session occ login stored for this origin.
	var pinned string
	if s.creds == nil {
		stored, err := loadSession(env, s.base)
		if err != nil {
			return nil, usageError(env, "%v", err)
		}
		if stored != nil {
			s.creds = &cliSessionCredentials{stored: *stored}
			if stored.NamespaceID != nil {
				pinned = *stored.NamespaceID // a pinned session acts in its Namespace only
			}
		}
	}

	if ns, given := setting(env, cmd, "namespace", "OCC_NAMESPACE"); given {
		s.namespaceRef = ns
	} else if selected.Namespace != "" {
		s.namespaceRef = selected.Namespace
	} else {
		s.namespaceRef = pinned
	}

	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	bundle, given := setting(env, cmd, "ca-bundle", "OCC_CA_BUNDLE")
	if !given {
		bundle = selected.CABundle
	}
	if bundle != "" {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		pem, err := os.ReadFile(bundle)
		if err != nil {
			return nil, usageError(env, "cannot read the CA bundle %s: %v", bundle, osReason(err))
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usageError(env, "the CA bundle %s holds no PEM certificate.", bundle)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	s.http = &http.Client{
		Transport: transport,
		// Redirects are never followed: a credential must not travel to another origin.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return s, nil
}

// optionalNamespace resolves the Namespace of a command that may use one (service-key create,
// audit list): "" when none is set.
func (s *clientSession) optionalNamespace() (string, error) {
	if s.namespace != "" || s.namespaceRef == "" {
		return s.namespace, nil
	}
	id, err := s.resolve(namespaceKind, s.namespaceRef)
	if err != nil {
		return "", err
	}
	s.namespace = id
	return id, nil
}

func flagValue(cmd *cobra.Command, name string) string {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// osReason is the operating system's reason of a file error ("no such file or directory", "is a
// directory"), without the path the message already names.
func osReason(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// parseOrigin accepts an http(s) origin only: no credentials, path, query or fragment.
func parseOrigin(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "", errors.New("the API URL must be an http:// or https:// origin, such as http://127.0.0.1:3000")
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", errors.New("the API URL must be an origin only: no credentials, path, query or fragment")
	}
	return u.Scheme + "://" + u.Host, nil
}

// apiDetail is one entry of an error's details: where, what, and (when the API says it) a
// sentence such as the allowed values.
type apiDetail struct {
	Path    string `json:"path"`
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// apiError is a refused request. NotOCC marks a reply without OCC's error envelope: something
// else answered at the URL.
type apiError struct {
	Status     int
	Code       string
	Message    string
	Details    []apiDetail
	RetryAfter string
	NotOCC     bool
	// hint, when set, is printed after the error: the command or flag that helps.
	hint string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// isAPIError reports whether err is the API's refusal with status (0: any) and code ("" any).
func isAPIError(err error, status int, code string) bool {
	var ae *apiError
	return errors.As(err, &ae) && !ae.NotOCC && (status == 0 || ae.Status == status) && (code == "" || ae.Code == code)
}

// page is a success body: data and the list cursor of meta.
type page struct {
	Data json.RawMessage `json:"data"`
	Meta struct {
		NextCursor *string `json:"nextCursor"`
	} `json:"meta"`
}

// call sends one request and returns the success body's data (nil for 204).
func (s *clientSession) call(method, path string, body []byte) (json.RawMessage, error) {
	p, err := s.send(method, path, body)
	if err != nil || p == nil {
		return nil, err
	}
	return p.Data, nil
}

// send sends one request with the session's credentials and returns the decoded success body
// (nil for 204).
func (s *clientSession) send(method, path string, body []byte) (*page, error) {
	ctx, cancel := context.WithTimeout(s.cmd.Context(), s.timeout)
	defer cancel()
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, reader)
	if err != nil {
		return nil, err
	}
	if s.creds != nil {
		s.creds.apply(req)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "occ/"+s.env.Version)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := s.http.Do(req)
	if err != nil {
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return nil, fmt.Errorf("the request timed out after %s", s.timeout)
		case errors.Is(err, context.Canceled):
			return nil, errors.New("the request was cancelled")
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("cannot reach %s: %v", s.base, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the response failed: %v", err)
	}
	if len(raw) > maxResponseBytes {
		return nil, errors.New("the response is too large")
	}
	if res.StatusCode >= 300 && res.StatusCode < 400 {
		return nil, fmt.Errorf("the server at %s answered with a redirect (%d); redirects are never followed. Is --url the OCC API?", s.base, res.StatusCode)
	}
	if res.StatusCode >= 400 {
		e := &apiError{Status: res.StatusCode, RetryAfter: res.Header.Get("Retry-After")}
		var doc struct {
			Error struct {
				Code    string      `json:"code"`
				Message string      `json:"message"`
				Details []apiDetail `json:"details"`
			} `json:"error"`
		}
		if json.Unmarshal(raw, &doc) == nil && doc.Error.Code != "" {
			e.Code, e.Message, e.Details = doc.Error.Code, doc.Error.Message, doc.Error.Details
		} else {
			e.Code, e.Message, e.NotOCC = "-", http.StatusText(res.StatusCode), true
		}
		return nil, e
	}
	if res.StatusCode == http.StatusNoContent {
		return nil, nil
	}
	var p page
	if err := json.Unmarshal(raw, &p); err != nil || p.Data == nil {
		return nil, fmt.Errorf("the server at %s answered %d with a body that is not an OCC response. Is --url the OCC API?", s.base, res.StatusCode)
	}
	return &p, nil
}

// fail prints a failed request to stderr and returns exit status 1.
func (s *clientSession) fail(err error) error {
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.NotOCC:
		fmt.Fprintf(s.env.Stderr, "Error: the server at %s answered %d %s with a body that is not an OCC response. Is --url the OCC API?\n",
			s.base, ae.Status, ae.Message)
	case errors.As(err, &ae):
		fmt.Fprintf(s.env.Stderr, "Error: %d %s: %s\n", ae.Status, sanitize(ae.Code), sanitize(ae.Message))
		for _, d := range ae.Details {
			line := sanitize(orDash(d.Path)) + ": " + sanitize(d.Code)
			if d.Message != "" {
				line += ": " + sanitize(d.Message)
			}
			fmt.Fprintln(s.env.Stderr, "  "+line)
		}
		if ae.RetryAfter != "" {
			fmt.Fprintf(s.env.Stderr, "Retry-After: %s\n", sanitize(ae.RetryAfter))
		}
		hint := ae.hint
		if hint == "" {
			hint = s.hintFor(ae)
		}
		if hint != "" {
			fmt.Fprintln(s.env.Stderr, "Hint: "+hint)
		}
	default:
		fmt.Fprintln(s.env.Stderr, "Error: "+err.Error())
	}
	return exitError{Code: exitRequestFailed}
}

// hintFor names the way out of refusals a person meets early.
func (s *clientSession) hintFor(e *apiError) string {
	switch {
	case e.Status == http.StatusUnauthorized && s.creds != nil:
		return s.creds.unauthorizedHint(s)
	case e.Code == codeHarnessAuthUnsupported && strings.Contains(e.Message, "api_key Secret"):
		return "this Compute Driver (Kubernetes) takes the model credential from a Secret: " +
			"occ agent update NAME --auth api_key --secret SECRET (dedicated Codex also takes --auth codex_pat), then deploy again."
	case e.Code == codeHarnessAuthUnsupported:
		return "this OCC's Compute Driver cannot deploy Agents. Locally, restart occ dev with --compute simulated " +
			"(simulated Agents) or --compute kubernetes --kubeconfig FILE --context NAME --gateway-image REF --agent-image REF; " +
			"an Installation selects its Compute Driver in the startup YAML (drivers.compute)."
	case e.Code == codeNamespaceNotReady:
		return "the Namespace is not ready yet: occ agent deploy --wait waits for it (occ namespace get NAME shows its status)."
	}
	return ""
}

// API codes the client gives hints for.
const (
	codeHarnessAuthUnsupported = "HARNESS_AUTH_UNSUPPORTED"
	codeNamespaceNotReady      = "NAMESPACE_NOT_READY"
)

// do runs call and prints its failure.
func (s *clientSession) do(method, path string, body []byte) (json.RawMessage, error) {
	data, err := s.call(method, path, body)
	if err != nil {
		return nil, s.fail(err)
	}
	return data, nil
}

// getInto GETs path and decodes the data into v (a typed view).
func (s *clientSession) getInto(path string, v any) error {
	data, err := s.call(http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	return decodeView(data, v)
}

// decodeView decodes a response's data into a typed view.
func decodeView(data json.RawMessage, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return errors.New("the API answered with an unexpected resource")
	}
	return nil
}

// listAll GETs every page of a list route (limit 500, following meta.nextCursor).
func (s *clientSession) listAll(path string) (json.RawMessage, error) {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	var all []json.RawMessage
	cursor := ""
	for {
		q := path + sep + "limit=500"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		p, err := s.send(http.MethodGet, q, nil)
		if err != nil {
			return nil, err
		}
		if p == nil {
			return nil, errors.New("the API answered a list without a body")
		}
		var items []json.RawMessage
		if err := json.Unmarshal(p.Data, &items); err != nil {
			return nil, errors.New("the API answered with an unexpected list")
		}
		all = append(all, items...)
		if p.Meta.NextCursor == nil || *p.Meta.NextCursor == "" {
			break
		}
		cursor = *p.Meta.NextCursor
	}
	if all == nil {
		all = []json.RawMessage{}
	}
	return json.Marshal(all)
}
