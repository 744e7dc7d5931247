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
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/platform"
)

// The client commands (api-iam §5) talk to a running occ api. Every group carries the global
// options as persistent flags; a flag beats its environment variable.

const (
	outputTable = "table"
	outputJSON  = "json"
	outputYAML  = "yaml"

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

// clientOptions are the global options of the client commands.
type clientOptions struct {
	url, keyFile, namespace, caBundle, output string
	timeoutSeconds                            int
}

// clientGroup returns a command group with the global client options as persistent flags.
func clientGroup(use, short string) (*cobra.Command, *clientOptions) {
	o := &clientOptions{}
	cmd := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs}
	f := cmd.PersistentFlags()
	f.StringVar(&o.url, "url", "", "API origin, such as http://127.0.0.1:3000 (env OCC_URL)")
	f.StringVar(&o.keyFile, "service-key-file", "", "service key file: the issuance JSON with data.key (env OCC_SERVICE_KEY_FILE)")
	f.StringVar(&o.namespace, "namespace", "", "Namespace id (ns_…) (env OCC_NAMESPACE)")
	f.StringVar(&o.caBundle, "ca-bundle", "", "extra PEM root certificates for https (env OCC_CA_BUNDLE)")
	f.IntVar(&o.timeoutSeconds, "timeout-seconds", defaultTimeoutSeconds, "request timeout in seconds (env OCC_TIMEOUT_SECONDS)")
	f.StringVarP(&o.output, "output", "o", outputTable, "output format: table, json or yaml")
	return cmd, o
}

// clientSession is one resolved client invocation.
type clientSession struct {
	env     Env
	cmd     *cobra.Command
	base    string
	key     string
	keyFile string
	// cliToken is the stored occ login session of this origin, used when no service key is given.
	cliToken  string
	namespace string
	output    string
	timeout   time.Duration
	http      *http.Client
}

// usageError prints a local refusal and returns exit status 2.
func usageError(env Env, format string, args ...any) error {
	fmt.Fprintln(env.Stderr, "Error: "+fmt.Sprintf(format, args...))
	return exitError{Code: exitUsage}
}

// setting returns the flag's value when given on the command line, else the environment
// variable's, else the flag's default.
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

// newClientSession resolves the global options. needNamespace requires --namespace.
func newClientSession(env Env, cmd *cobra.Command, needNamespace bool) (*clientSession, error) {
	return newClientSessionWith(env, cmd, needNamespace, false)
}

// newClientSessionWith resolves the global options; anonymous commands (occ login, occ logout)
// need no credential.
func newClientSessionWith(env Env, cmd *cobra.Command, needNamespace, anonymous bool) (*clientSession, error) {
	s := &clientSession{env: env, cmd: cmd}
	s.output, _ = setting(env, cmd, "output", "") // no environment variable
	switch s.output {
	case outputTable, outputJSON, outputYAML:
	default:
		return nil, usageError(env, "--output must be table, json or yaml.")
	}
	raw, _ := setting(env, cmd, "url", "OCC_URL")
	if raw == "" {
		return nil, usageError(env, "no API URL: pass --url or set OCC_URL (occ dev prints it).")
	}
	base, err := parseOrigin(raw)
	if err != nil {
		return nil, usageError(env, "%v", err)
	}
	s.base = base

	timeout, _ := setting(env, cmd, "timeout-seconds", "OCC_TIMEOUT_SECONDS")
	n, err := strconv.Atoi(timeout)
	if err != nil || n < 1 || n > maxTimeoutSeconds || strconv.Itoa(n) != timeout {
		return nil, usageError(env, "--timeout-seconds must be a whole number from 1 to %d.", maxTimeoutSeconds)
	}
	s.timeout = time.Duration(n) * time.Second

	keyFile, _ := setting(env, cmd, "service-key-file", "OCC_SERVICE_KEY_FILE")
	var stored *storedSession
	switch {
	case anonymous:
	case keyFile != "":
		if s.key, err = readServiceKey(keyFile); err != nil {
			return nil, usageError(env, "%v", err)
		}
		s.keyFile = keyFile
	default:
		// Without a service key, the stored occ login session of this origin.
		if stored, err = loadSession(env, base); err != nil {
			return nil, usageError(env, "%v", err)
		} else if stored == nil {
			return nil, usageError(env, "no credentials: pass --service-key-file, set OCC_SERVICE_KEY_FILE or run occ login.")
		}
		s.cliToken = stored.Token
	}

	ns, _ := setting(env, cmd, "namespace", "OCC_NAMESPACE")
	if ns == "" && stored != nil && stored.NamespaceID != nil {
		ns = *stored.NamespaceID // a pinned session acts in its Namespace only
	}
	if ns != "" && !platform.ValidID(platform.PrefixNamespace, ns) {
		return nil, usageError(env, "%s is not a Namespace id (ns_…). List them with: occ namespace list", quoteIfNeeded(ns))
	}
	if needNamespace && ns == "" {
		return nil, usageError(env, "this command needs a Namespace: pass --namespace ns_… or set OCC_NAMESPACE (occ namespace list).")
	}
	s.namespace = ns

	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	if bundle, _ := setting(env, cmd, "ca-bundle", "OCC_CA_BUNDLE"); bundle != "" {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		pem, err := os.ReadFile(bundle)
		if err != nil {
			return nil, usageError(env, "cannot read the CA bundle %s: %v", bundle, errors.Unwrap(err))
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

// readServiceKey returns data.key of a service key issuance file.
func readServiceKey(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cannot read the service key file %s: %v", path, errors.Unwrap(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil || len(data) > maxFileBytes {
		return "", fmt.Errorf("cannot read the service key file %s", path)
	}
	var doc struct {
		Data struct {
			Key string `json:"key"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.Data.Key == "" || strings.ContainsAny(doc.Data.Key, "\r\n") ||
		strings.TrimSpace(doc.Data.Key) != doc.Data.Key {
		return "", fmt.Errorf("the service key file %s is not a service key issuance document (data.key)", path)
	}
	return doc.Data.Key, nil
}

// apiError is a refused request.
type apiError struct {
	Status     int
	Code       string
	Message    string
	Details    []struct{ Path, Code string }
	RetryAfter string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// call sends one request and returns the success body's data (nil for 204).
func (s *clientSession) call(method, path string, body []byte) (json.RawMessage, error) {
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
	switch {
	case s.key != "":
		req.Header.Set("x-api-key", s.key)
	case s.cliToken != "":
		req.Header.Set(cliSessionHeader, s.cliToken)
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
		return nil, fmt.Errorf("the API answered with a redirect (%d); redirects are never followed", res.StatusCode)
	}
	if res.StatusCode >= 400 {
		e := &apiError{Status: res.StatusCode, RetryAfter: res.Header.Get("Retry-After")}
		var doc struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
				Details []struct {
					Path string `json:"path"`
					Code string `json:"code"`
				} `json:"details"`
			} `json:"error"`
		}
		if json.Unmarshal(raw, &doc) == nil && doc.Error.Code != "" {
			e.Code, e.Message = doc.Error.Code, doc.Error.Message
			for _, d := range doc.Error.Details {
				e.Details = append(e.Details, struct{ Path, Code string }{d.Path, d.Code})
			}
		} else {
			e.Code, e.Message = "-", http.StatusText(res.StatusCode)
		}
		return nil, e
	}
	if res.StatusCode == http.StatusNoContent {
		return nil, nil
	}
	var doc struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, errors.New("the API answered with a body that is not an OCC response")
	}
	return doc.Data, nil
}

// fail prints a failed request to stderr and returns exit status 1.
func (s *clientSession) fail(err error) error {
	var ae *apiError
	if errors.As(err, &ae) {
		fmt.Fprintf(s.env.Stderr, "Error: %d %s: %s\n", ae.Status, sanitize(ae.Code), sanitize(ae.Message))
		for _, d := range ae.Details {
			fmt.Fprintf(s.env.Stderr, "  %s: %s\n", sanitize(orDash(d.Path)), sanitize(d.Code))
		}
		if ae.RetryAfter != "" {
			fmt.Fprintf(s.env.Stderr, "Retry-After: %s\n", sanitize(ae.RetryAfter))
		}
	} else {
		fmt.Fprintln(s.env.Stderr, "Error: "+err.Error())
	}
	return exitError{Code: exitRequestFailed}
}

// do runs call and prints its failure.
func (s *clientSession) do(method, path string, body []byte) (json.RawMessage, error) {
	data, err := s.call(method, path, body)
	if err != nil {
		return nil, s.fail(err)
	}
	return data, nil
}

// --- output -------------------------------------------------------------------------------------

// column is one table column: a header and the cell of an item.
type column struct {
	header string
	cell   func(item map[string]any) string
}

func field(name string) func(map[string]any) string {
	return func(item map[string]any) string { return text(item[name]) }
}

func col(header, name string) column { return column{header, field(name)} }

// text renders a JSON value for a table cell.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// unsafeRune reports characters a terminal must not receive raw: controls, bidi controls and
// line or paragraph separators.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f, r == 0x2028, r == 0x2029, r == 0x061c, r == 0x200e, r == 0x200f,
		r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == utf8.RuneError:
		return true
	}
	return false
}

// sanitize quotes and escapes a value that holds unsafe characters.
func sanitize(s string) string {
	if !utf8.ValidString(s) || strings.IndexFunc(s, unsafeRune) >= 0 {
		var b strings.Builder
		b.WriteByte('"')
		for i, r := range s {
			switch {
			case r == utf8.RuneError && !utf8.ValidString(s[i:i+1]):
				fmt.Fprintf(&b, `\x%02x`, s[i])
			case unsafeRune(r):
				if r < 0x80 {
					fmt.Fprintf(&b, `\x%02x`, r)
				} else {
					fmt.Fprintf(&b, `\u%04x`, r)
				}
			case r == '"' || r == '\\':
				b.WriteByte('\\')
				b.WriteRune(r)
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('"')
		return b.String()
	}
	return s
}

// quoteIfNeeded is sanitize for values echoed in messages; blank values are shown quoted.
func quoteIfNeeded(s string) string {
	if s == "" || strings.IndexFunc(s, unicode.IsSpace) >= 0 {
		return strconv.Quote(s)
	}
	return sanitize(s)
}

func decodeItems(data json.RawMessage) ([]map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var items []map[string]any
	if err := dec.Decode(&items); err != nil {
		return nil, errors.New("the API answered with an unexpected list")
	}
	return items, nil
}

func decodeItem(data json.RawMessage) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var item map[string]any
	if err := dec.Decode(&item); err != nil || item == nil {
		return nil, errors.New("the API answered with an unexpected resource")
	}
	return item, nil
}

// printStructured prints data bare, as indented JSON or as YAML.
func (s *clientSession) printStructured(data json.RawMessage) error {
	switch s.output {
	case outputJSON:
		var b bytes.Buffer
		if err := json.Indent(&b, data, "", "  "); err != nil {
			return s.fail(errors.New("the API answered with invalid JSON"))
		}
		b.WriteByte('\n')
		_, err := s.env.Stdout.Write(b.Bytes())
		return err
	default:
		y, err := yaml.JSONToYAML(data)
		if err != nil {
			return s.fail(errors.New("the API answered with invalid JSON"))
		}
		_, err = s.env.Stdout.Write(y)
		return err
	}
}

func (s *clientSession) printTable(items []map[string]any, cols []column) {
	w := tabwriter.NewWriter(s.env.Stdout, 0, 0, 3, ' ', 0)
	headers := make([]string, len(cols))
	for i, c := range cols {
		headers[i] = c.header
	}
	fmt.Fprintln(w, strings.Join(headers, "\t"))
	for _, item := range items {
		cells := make([]string, len(cols))
		for i, c := range cols {
			cells[i] = orDash(sanitize(c.cell(item)))
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	_ = w.Flush()
}

// printList prints a list response.
func (s *clientSession) printList(data json.RawMessage, cols []column) error {
	if s.output != outputTable {
		if len(bytes.TrimSpace(data)) == 0 || string(bytes.TrimSpace(data)) == "null" {
			data = json.RawMessage("[]")
		}
		return s.printStructured(data)
	}
	items, err := decodeItems(data)
	if err != nil {
		return s.fail(err)
	}
	if len(items) == 0 {
		fmt.Fprintln(s.env.Stdout, "No resources found.")
		return nil
	}
	s.printTable(items, cols)
	return nil
}

// printItem prints one resource.
func (s *clientSession) printItem(data json.RawMessage, cols []column) error {
	if s.output != outputTable {
		return s.printStructured(data)
	}
	item, err := decodeItem(data)
	if err != nil {
		return s.fail(err)
	}
	s.printTable([]map[string]any{item}, cols)
	return nil
}

// printDeleted reports a deletion without a response body: a sentence, or {deleted, kind, id}.
func (s *clientSession) printDeleted(kind, id string) error {
	if s.output == outputTable {
		fmt.Fprintf(s.env.Stdout, "Deleted %s %s.\n", kind, sanitize(id))
		return nil
	}
	data, _ := json.Marshal(map[string]any{"deleted": true, "kind": strings.ReplaceAll(kind, " ", "_"), "id": id})
	return s.printStructured(data)
}

// --- local checks -------------------------------------------------------------------------------

// checkID refuses an id without the expected prefix, naming the list command.
func checkID(env Env, id, prefix, what, listCommand string) error {
	if platform.ValidID(prefix, id) {
		return nil
	}
	return usageError(env, "%s is not a %s id (%s_…). List them with: %s", quoteIfNeeded(id), what, prefix, listCommand)
}

// checkOpaqueID refuses an empty, over-long or control-character id.
func checkOpaqueID(env Env, id, what, listCommand string) error {
	if id != "" && len(id) <= 200 && strings.IndexFunc(id, func(r rune) bool { return r <= 0x20 || (r >= 0x7f && r <= 0x9f) }) < 0 {
		return nil
	}
	return usageError(env, "%s is not a %s id. List them with: %s", quoteIfNeeded(id), what, listCommand)
}

// readJSONFile reads --file: a local JSON object (no stdin, no YAML), at most 64 KiB.
func readJSONFile(env Env, path string) ([]byte, error) {
	if path == "" {
		return nil, usageError(env, "--file is required: a JSON file with the resource.")
	}
	if path == "-" {
		return nil, usageError(env, "--file reads a local file; standard input is not supported.")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, usageError(env, "cannot read %s: %v", path, errors.Unwrap(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, usageError(env, "cannot read %s", path)
	}
	if len(data) > maxFileBytes {
		return nil, usageError(env, "%s is larger than 64 KiB.", path)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
		return nil, usageError(env, "%s is not a JSON object.", path)
	}
	return data, nil
}
