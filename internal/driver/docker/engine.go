package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/openclaw/occ/internal/driver"
)

// maxResponseBytes bounds what the driver reads of one Engine response.
const maxResponseBytes = 8 << 20

// engine is a minimal Docker Engine API client over a Unix socket.
type engine struct {
	socket  string
	timeout time.Duration
	client  *http.Client
}

func newEngine(socket string, timeout time.Duration) *engine {
	transport := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	return &engine{
		socket:  socket,
		timeout: timeout,
		client: &http.Client{
			Transport:     transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// unavailable is the transient error of a failed Engine request.
func unavailable(reason string, status int) error {
	return &driver.TransientDependencyError{
		Dependency: driver.DependencyDocker,
		Code:       driver.CodeDockerEngineUnavailable,
		Status:     status,
		Reason:     reason,
	}
}

// Driver-specific codes.
const (
	// CodeNetworkConflict refuses a same-named network that does not carry this Namespace's
	// ownership labels.
	CodeNetworkConflict = "NAMESPACE_NETWORK_CONFLICT"
	// CodeEngineRejected is a Docker Engine answer the driver cannot act on.
	CodeEngineRejected = "DOCKER_ENGINE_REJECTED"
	// CodeEngineInvalidResponse is a 2xx answer the driver could not decode.
	CodeEngineInvalidResponse = "DOCKER_ENGINE_INVALID_RESPONSE"
	// CodeExistingNamespaceUnsupported refuses an existingNamespace selection (upstream: 409).
	CodeExistingNamespaceUnsupported = "EXISTING_NAMESPACE_UNSUPPORTED"
)

// rejected classifies an unexpected HTTP status as upstream's Docker driver does: 400, 401, 403,
// 404, 409 and 422 are permanent, anything else retryable. 429 and 5xx never get here.
func rejected(status int) error {
	reason := "A Docker Engine request failed with HTTP status " + strconv.Itoa(status) + "."
	switch status {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
		http.StatusConflict, http.StatusUnprocessableEntity:
		return &driver.PermanentError{Code: CodeEngineRejected, Reason: reason}
	}
	return &driver.RetryableError{Code: CodeEngineRejected, Reason: reason}
}

// do sends one request. It returns the HTTP status of any answer below 500 other than 429 (the
// caller decides what 4xx means) and decodes a 2xx body into out when out is not nil. Errors:
// ctx's own error when ctx ended; a TransientDependencyError for a timeout, a socket failure, 429
// or 5xx; a RetryableError for an undecodable 2xx body. Bodies never reach an error.
func (e *engine) do(ctx context.Context, method, path string, query url.Values, body, out any) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	rctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()

	var reader io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		reader = bytes.NewReader(buf)
	}
	u := url.URL{Scheme: "http", Host: "docker", Path: path}
	if query != nil {
		u.RawQuery = query.Encode()
	}
	req, err := http.NewRequestWithContext(rctx, method, u.String(), reader)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, e.transportError(ctx, rctx)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
		_ = resp.Body.Close()
	}()

	status := resp.StatusCode
	if status == http.StatusTooManyRequests || status >= 500 {
		return status, unavailable(driver.TransientUnavailable, status)
	}
	if status < 200 || status > 299 || out == nil {
		return status, nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return status, e.transportError(ctx, rctx)
	}
	if len(data) > maxResponseBytes || json.Unmarshal(data, out) != nil {
		return status, &driver.RetryableError{Code: CodeEngineInvalidResponse, Reason: "The Docker Engine sent a response the driver cannot read."}
	}
	return status, nil
}

// transportError classifies a failed round trip: the caller's context first, then this request's
// timeout, then an unreachable engine. The underlying error text (which may name paths or carry
// engine output) is dropped on purpose.
func (e *engine) transportError(ctx, rctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return unavailable(driver.TransientTimeout, 0)
	}
	return unavailable(driver.TransientUnreachable, 0)
}

// ping checks GET /_ping answers OK.
func (e *engine) ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, "http://docker/_ping", nil)
	if err != nil {
		return err
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return e.transportError(ctx, rctx)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64))
	if err != nil {
		return e.transportError(ctx, rctx)
	}
	if resp.StatusCode != http.StatusOK || string(bytes.TrimSpace(data)) != "OK" {
		return unavailable(driver.TransientUnavailable, resp.StatusCode)
	}
	return nil
}

type versionInfo struct {
	APIVersion string `json:"ApiVersion"`
	Components []struct {
		Name string `json:"Name"`
	} `json:"Components"`
}

func (e *engine) version(ctx context.Context) (versionInfo, error) {
	var v versionInfo
	status, err := e.do(ctx, http.MethodGet, "/version", nil, nil, &v)
	if err != nil {
		return v, err
	}
	if status != http.StatusOK || v.APIVersion == "" {
		return v, rejected(status)
	}
	return v, nil
}

type network struct {
	ID     string            `json:"Id"`
	Name   string            `json:"Name"`
	Labels map[string]string `json:"Labels"`
}

// networksNamed lists the networks whose name is exactly name (the engine's name filter matches
// substrings).
func (e *engine) networksNamed(ctx context.Context, name string) ([]network, error) {
	filters, err := json.Marshal(map[string]map[string]bool{"name": {name: true}})
	if err != nil {
		return nil, err
	}
	var all []network
	status, err := e.do(ctx, http.MethodGet, "/networks", url.Values{"filters": {string(filters)}}, nil, &all)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, rejected(status)
	}
	var exact []network
	for _, n := range all {
		if n.Name == name {
			exact = append(exact, n)
		}
	}
	return exact, nil
}

// createNetwork creates a bridge network. It reports whether the engine refused it because the
// name is taken (409), which the caller resolves by listing again.
func (e *engine) createNetwork(ctx context.Context, name string, labels map[string]string) (conflict bool, err error) {
	body := map[string]any{
		"Name":           name,
		"Driver":         "bridge",
		"CheckDuplicate": true, // older engines only check duplicate names when asked
		"Labels":         labels,
	}
	var created struct {
		ID string `json:"Id"`
	}
	status, err := e.do(ctx, http.MethodPost, "/networks/create", nil, body, &created)
	switch {
	case err != nil:
		return false, err
	case status == http.StatusCreated || status == http.StatusOK:
		return false, nil
	case status == http.StatusConflict:
		return true, nil
	}
	return false, rejected(status)
}

// removeNetwork removes a network by id; a network that is already gone is not an error.
func (e *engine) removeNetwork(ctx context.Context, id string) error {
	status, err := e.do(ctx, http.MethodDelete, "/networks/"+id, nil, nil, nil) // url.URL escapes the path
	switch {
	case err != nil:
		return err
	case status == http.StatusNoContent || status == http.StatusOK || status == http.StatusNotFound:
		return nil
	}
	return rejected(status)
}
