package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
)

var detailPath = regexp.MustCompile(`^(/([^~/]|~0|~1)*)*$`)

// referenceValidators compiles every route's request schema, as rendered into the OpenAPI
// document, with an independent JSON Schema 2020-12 validator.
func referenceValidators(tb testing.TB) []*jsonschema.Schema {
	tb.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	for _, f := range formats {
		name, check := f.Name, f.Check
		c.RegisterFormat(&jsonschema.Format{Name: name, Validate: func(v any) error {
			if s, ok := v.(string); ok && !check(s) {
				return errors.New("does not satisfy " + name)
			}
			return nil
		}})
	}
	routes := Routes()
	out := make([]*jsonschema.Schema, len(routes))
	for i, r := range routes {
		schema := r.Body
		if schema == nil {
			schema = emptyBody
		}
		raw, err := json.Marshal(schema.JSONSchema())
		if err != nil {
			tb.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			tb.Fatal(err)
		}
		// The operationId is unique; several routes may share an audit action.
		loc := "mem://route-" + r.operationID() + ".json"
		if err := c.AddResource(loc, doc); err != nil {
			tb.Fatal(err)
		}
		if out[i], err = c.Compile(loc); err != nil {
			tb.Fatalf("%s: %v", r.Action, err)
		}
	}
	return out
}

// hugeExponent marks numbers the reference validator would expand at great cost.
var hugeExponent = regexp.MustCompile(`[eE][+-]?0*[0-9]{4,}`)

func checkError(t *testing.T, e *platform.Error, statuses ...int) {
	t.Helper()
	ok := false
	for _, s := range statuses {
		ok = ok || e.Status() == s
	}
	if !ok {
		t.Fatalf("status %d (%s)", e.Status(), e.Code)
	}
	if n := len([]rune(e.Message)); n < 1 || n > 256 || len(e.Details) > problem.MaxDetails {
		t.Fatalf("message or details out of bounds: %+v", e)
	}
	for _, d := range e.Details {
		if !detailPath.MatchString(d.Path) || len(d.Path) > 512*4 || d.Code == "" {
			t.Fatalf("detail %+v", d)
		}
	}
}

// FuzzDecodeRequest feeds arbitrary media types, query strings and bodies to every route's
// decoders. They never panic, only ever answer 400, 413 or 415 with well-formed details, and
// accept exactly what the reference JSON Schema validator accepts for the route's schema.
func FuzzDecodeRequest(f *testing.F) {
	routes := Routes()
	reference := referenceValidators(f)
	seeds := []string{
		`{}`, `[]`, `null`, `{"name":"support"}`, `{"name":"support","existingNamespace":"team-a"}`,
		`{"email":"a@b.co","password":"twelve-chars!"}`, `{"permissions":[{"action":"read","resourceKind":"namespace"}]}`,
		`{"servicePrincipalId":"spn_x","name":"ci","expiresIn":86400.0}`, `{"expiresIn":1e5}`, `{"expiresIn":-0}`,
		`{"subjectKind":"identity","subjectId":"p","roleId":"r","resourceKind":"secret","resourceId":"s","runtimeRole":" x"}`,
		`{"name":"\u2028"}`, `{"name":"\ud83d\ude00"}`, `{"name":"\ud800"}`, `{"a":{"a":{"a":[[[[1]]]]}}}`,
		`{"name":"a","name":"b"}`, `{"name":"x"} trailing`, "\xff", `{"github":{"subject":"1"}}`,
		// Extreme exponents once panicked the integer reader (issue 14).
		`{"expiresIn":1e9223372036854775807}`, `{"expiresIn":1e-9223372036854775808}`, `{"expiresIn":1.5e-9223372036854775808}`,
		`{"subjectKind":"identity","subjectId":"a\u0000b","roleId":"r","resourceKind":"namespace","resourceId":"n"}`,
	}
	for i := range routes {
		for _, s := range seeds {
			f.Add(uint8(i), "application/json", "limit=5", []byte(s))
		}
	}
	f.Add(uint8(0), "text/plain", "", []byte(`{}`))
	f.Add(uint8(0), "application/json; charset=latin1", "cursor=%zz", []byte(`{}`))

	f.Fuzz(func(t *testing.T, idx uint8, contentType, query string, body []byte) {
		i := int(idx) % len(routes)
		route := routes[i]
		r := &http.Request{
			Method: route.Method, URL: &url.URL{Path: route.Path, RawQuery: query},
			Header: http.Header{"Content-Type": []string{contentType}}, Body: io.NopCloser(bytes.NewReader(body)),
			ContentLength: int64(len(body)),
		}
		raw, perr := readBody(r, route.bodyLimit())
		if perr != nil {
			checkError(t, perr, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
			return
		}
		if _, perr := decodeQuery(query, route.Query); perr != nil {
			checkError(t, perr, http.StatusBadRequest)
		}
		out, perr := decodeBody(route.Body, raw)
		if perr != nil {
			checkError(t, perr, http.StatusBadRequest)
		} else {
			// The canonical form is itself accepted, unchanged.
			again, perr := decodeBody(route.Body, out)
			if perr != nil || !bytes.Equal(again, out) {
				t.Fatalf("canonical form not stable: %s -> %s (%v)", out, again, perr)
			}
		}
		if len(bytes.TrimSpace(raw)) == 0 || hugeExponent.Match(raw) {
			return
		}
		if _, derr := decodeJSON(raw); derr != nil {
			return // not one well-formed document: outside the reference validator's contract
		}
		instance, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return
		}
		refErr := reference[i].Validate(instance)
		if (perr == nil) != (refErr == nil) {
			t.Fatalf("%s: ours %v, reference %v, body %s", route.Action, perr, refErr, strings.TrimSpace(string(raw)))
		}
	})
}
