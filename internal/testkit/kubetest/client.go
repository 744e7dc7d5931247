package kubetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Object is a Kubernetes object (or list) decoded as generic JSON.
type Object = map[string]any

// Patch content types accepted by Client.Patch.
const (
	MergePatch          = "application/merge-patch+json"
	StrategicMergePatch = "application/strategic-merge-patch+json"
	JSONPatch           = "application/json-patch+json"
	applyPatch          = "application/apply-patch+yaml"
)

// DefaultFieldManager is the field manager of Client.Apply.
const DefaultFieldManager = "kubetest"

// Client is a small JSON REST client for one identity of a Cluster. Paths are API paths such as
// "/api/v1/namespaces/x/pods" (build them with CorePath and GroupPath). Every request has a 30 s
// timeout. Errors returned for HTTP statuses >= 300 are *StatusError.
type Client struct {
	cluster  *Cluster
	identity string
	token    string
}

// StatusError is a non-2xx answer of the API server, with the decoded metav1.Status when present.
type StatusError struct {
	Method, Path string
	Code         int    // HTTP status code
	Reason       string // Status.reason, e.g. "NotFound", "Forbidden", "AlreadyExists", "Conflict"
	Message      string // Status.message (or the body when it is not a Status)
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.Path, e.Code, e.Reason, e.Message)
}

// StatusCode returns the HTTP status code carried by err (a *StatusError), or 0.
func StatusCode(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

// IsNotFound reports whether err is a 404 from the API server.
func IsNotFound(err error) bool { return StatusCode(err) == http.StatusNotFound }

// IsForbidden reports whether err is a 403 from the API server.
func IsForbidden(err error) bool { return StatusCode(err) == http.StatusForbidden }

// IsAlreadyExists reports whether err is a 409 AlreadyExists from the API server.
func IsAlreadyExists(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == http.StatusConflict && se.Reason == "AlreadyExists"
}

// CorePath builds a path in the core group: CorePath("", "namespaces", "x") is
// /api/v1/namespaces/x and CorePath("x", "pods", "") is /api/v1/namespaces/x/pods. A subresource can
// be appended to name ("p/status").
func CorePath(namespace, resource, name string) string {
	return resourcePath("/api/v1", namespace, resource, name)
}

// GroupPath builds a path in a named group version: GroupPath("apps/v1", "x", "deployments", "d").
func GroupPath(groupVersion, namespace, resource, name string) string {
	return resourcePath("/apis/"+groupVersion, namespace, resource, name)
}

func resourcePath(prefix, namespace, resource, name string) string {
	p := prefix
	if namespace != "" {
		p += "/namespaces/" + namespace
	}
	p += "/" + resource
	if name != "" {
		p += "/" + name
	}
	return p
}

// Identity is the static identity whose token the client sends.
func (c *Client) Identity() string { return c.identity }

// Get reads one object.
func (c *Client) Get(path string) (Object, error) {
	var out Object
	return out, c.Do(context.Background(), http.MethodGet, path, "", nil, &out)
}

// GetInto reads one object into out.
func (c *Client) GetInto(path string, out any) error {
	return c.Do(context.Background(), http.MethodGet, path, "", nil, out)
}

// List reads a collection and returns its items. query may be nil; a "labelSelector" in it is passed
// through (see Selector).
func (c *Client) List(path string, query url.Values) ([]Object, error) {
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	var out struct {
		Items []Object `json:"items"`
	}
	if err := c.Do(context.Background(), http.MethodGet, path, "", nil, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// Create POSTs obj to the collection path and returns the created object.
func (c *Client) Create(collectionPath string, obj any) (Object, error) {
	var out Object
	return out, c.Do(context.Background(), http.MethodPost, collectionPath, "application/json", obj, &out)
}

// Update PUTs obj to the object path.
func (c *Client) Update(path string, obj any) (Object, error) {
	var out Object
	return out, c.Do(context.Background(), http.MethodPut, path, "application/json", obj, &out)
}

// Apply is a server-side apply (force, field manager DefaultFieldManager) of obj to the object path
// (the path includes the name).
func (c *Client) Apply(path string, obj any) (Object, error) {
	var out Object
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return out, c.Do(context.Background(), http.MethodPatch, path+sep+"fieldManager="+DefaultFieldManager+"&force=true",
		applyPatch, obj, &out)
}

// Patch sends a patch of type patchType (MergePatch, StrategicMergePatch or JSONPatch).
func (c *Client) Patch(path, patchType string, patch any) (Object, error) {
	var out Object
	return out, c.Do(context.Background(), http.MethodPatch, path, patchType, patch, &out)
}

// Delete deletes an object. opts, when not nil, is sent as the DeleteOptions body (for example
// Object{"propagationPolicy": "Foreground"} or {"preconditions": {"uid": ...}}).
func (c *Client) Delete(path string, opts Object) error {
	var body any
	ct := ""
	if opts != nil {
		o := Object{"kind": "DeleteOptions", "apiVersion": "v1"}
		for k, v := range opts {
			o[k] = v
		}
		body, ct = o, "application/json"
	}
	return c.Do(context.Background(), http.MethodDelete, path, ct, body, nil)
}

// Raw performs a GET on any path (e.g. "/version", "/readyz") and returns the body.
func (c *Client) Raw(path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.do(ctx, http.MethodGet, path, "", nil)
}

// Do performs a request. body (when not nil) is JSON-encoded unless it is a []byte; out (when not
// nil) receives the JSON answer. A context without deadline gets 30 s.
func (c *Client) Do(ctx context.Context, method, path, contentType string, body, out any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	var raw []byte
	if body != nil {
		if b, ok := body.([]byte); ok {
			raw = b
		} else {
			var err error
			if raw, err = json.Marshal(body); err != nil {
				return fmt.Errorf("%s %s: encode body: %w", method, path, err)
			}
		}
	}
	resp, err := c.do(ctx, method, path, contentType, raw)
	if err != nil {
		return err
	}
	if out != nil && len(resp) > 0 {
		if err := json.Unmarshal(resp, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

func (c *Client) do(ctx context.Context, method, path, contentType string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.cluster.URL+path, rd)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.cluster.httpClient().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		se := &StatusError{Method: method, Path: path, Code: resp.StatusCode, Reason: http.StatusText(resp.StatusCode)}
		var st struct {
			Kind    string `json:"kind"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &st) == nil && st.Kind == "Status" {
			if st.Reason != "" {
				se.Reason = st.Reason
			}
			se.Message = st.Message
		} else {
			se.Message = strings.TrimSpace(string(data))
		}
		return nil, se
	}
	return data, nil
}

// Selector renders a label selector map as query parameters for List:
// Selector(map[string]string{"app": "x"}) is labelSelector=app=x.
func Selector(labels map[string]string) url.Values {
	parts := make([]string, 0, len(labels))
	for k, v := range labels {
		parts = append(parts, k+"="+v)
	}
	return url.Values{"labelSelector": {strings.Join(parts, ",")}}
}

// Str returns the string at the given path of nested maps (e.g. Str(pod, "status", "phase")), or "".
func Str(obj Object, path ...string) string {
	v, _ := Field(obj, path...).(string)
	return v
}

// Field returns the value at the given path of nested maps, or nil.
func Field(obj Object, path ...string) any {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

// Slice returns the list at the given path as a slice of objects (non-object entries are skipped).
func Slice(obj Object, path ...string) []Object {
	l, _ := Field(obj, path...).([]any)
	out := make([]Object, 0, len(l))
	for _, e := range l {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
