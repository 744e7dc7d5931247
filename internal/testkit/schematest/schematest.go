// Package schematest checks a Driver configuration schema against an independent JSON Schema
// 2020-12 validator (santhosh-tekuri/jsonschema), the way the API's request schemas are checked:
// the document a schema renders and the validation it performs must agree.
package schematest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/openclaw/occ/internal/driver"
)

// Compile compiles doc, a rendered JSON Schema document, with the reference validator.
func Compile(tb testing.TB, name string, doc map[string]any) *jsonschema.Schema {
	tb.Helper()
	raw, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		tb.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	loc := "mem://" + name + ".json"
	if err := c.AddResource(loc, parsed); err != nil {
		tb.Fatal(err)
	}
	s, err := c.Compile(loc)
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return s
}

// Agree checks schema against the reference validator on each valid configuration and on the
// mutations derived from it:
//   - every valid configuration is accepted by both;
//   - an unknown member added to any object, and any member replaced by a value of another JSON
//     type, is refused by both (the rendering is closed and typed everywhere);
//   - for every other mutation (a member removed, a string or number replaced by an unusual
//     value), what the reference refuses, the schema refuses too. The schema may refuse more: its
//     semantic checks and byte lengths are not part of the document.
func Agree(t *testing.T, name string, schema driver.ConfigurationSchema, valid ...map[string]any) {
	t.Helper()
	reference := Compile(t, name, schema.JSONSchema())
	for i, cfg := range valid {
		raw, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ours, theirs := judge(t, schema, reference, raw)
		if ours != nil || theirs != nil {
			t.Fatalf("%s: valid configuration %d refused: ours %v, reference %v", name, i, ours, theirs)
		}
		for _, m := range mutations(decode(t, raw), "") {
			raw, err := json.Marshal(m.doc)
			if err != nil {
				t.Fatal(err)
			}
			ours, theirs := judge(t, schema, reference, raw)
			switch {
			case m.structural && (ours == nil || theirs == nil):
				t.Errorf("%s: %s: not refused by both: ours %s, reference %s", name, m.what, short(ours), short(theirs))
			case theirs != nil && ours == nil:
				t.Errorf("%s: %s: refused by the reference only (%s)", name, m.what, short(theirs))
			}
		}
	}
}

// judge validates raw with both validators; the configuration is decoded with json.Number, as the
// startup loader hands it over.
func judge(t *testing.T, schema driver.ConfigurationSchema, reference *jsonschema.Schema, raw []byte) (ours, theirs error) {
	t.Helper()
	cfg, _ := decode(t, raw).(map[string]any)
	instance, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return schema.Validate(cfg), reference.Validate(instance)
}

func decode(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

type mutation struct {
	what       string
	doc        any
	structural bool
}

// mutations returns the single-edit variants of doc, each a deep copy.
func mutations(doc any, path string) []mutation {
	var out []mutation
	switch v := doc.(type) {
	case map[string]any:
		added := clone(v).(map[string]any)
		added["zzUnknownMember"] = true
		out = append(out, mutation{"unknown member at " + at(path), added, true})
		for _, k := range slices.Sorted(maps.Keys(v)) {
			p := path + "/" + k
			removed := clone(v).(map[string]any)
			delete(removed, k)
			out = append(out, mutation{"removed " + p, removed, false})
			for _, r := range replacements(v[k], p) {
				m := clone(v).(map[string]any)
				m[k] = r.doc
				out = append(out, mutation{r.what, m, r.structural})
			}
			for _, inner := range mutations(v[k], p) {
				m := clone(v).(map[string]any)
				m[k] = inner.doc
				out = append(out, mutation{inner.what, m, inner.structural})
			}
		}
	case []any:
		for i := range v {
			p := fmt.Sprintf("%s/%d", path, i)
			for _, r := range replacements(v[i], p) {
				l := clone(v).([]any)
				l[i] = r.doc
				out = append(out, mutation{r.what, l, r.structural})
			}
			for _, inner := range mutations(v[i], p) {
				l := clone(v).([]any)
				l[i] = inner.doc
				out = append(out, mutation{inner.what, l, inner.structural})
			}
		}
	}
	return out
}

// replacements are the values put in place of v: one of another JSON type (structural), and
// unusual values of the same type.
func replacements(v any, path string) []mutation {
	var out []mutation
	other := func(what string, x any) {
		out = append(out, mutation{path + " replaced by " + what, x, true})
	}
	same := func(what string, x any) {
		out = append(out, mutation{path + " replaced by " + what, x, false})
	}
	switch v.(type) {
	case string:
		other("a number", json.Number("7"))
		same("an unusual string", "zz not a value/..")
		same("an empty string", "")
		same("a long string", strings.Repeat("x", 5000))
	case json.Number:
		other("a string", "7")
		same("a large integer", json.Number("1000000000000"))
		same("a negative integer", json.Number("-1"))
		same("a fraction", json.Number("2.5"))
	case bool:
		other("a string", "true")
	case map[string]any:
		other("a string", "{}")
		same("an empty object", map[string]any{})
	case []any:
		other("an object", map[string]any{})
		same("an empty list", []any{})
	}
	return out
}

func clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = clone(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = clone(e)
		}
		return l
	}
	return v
}

// short is the start of err's text: a refusal of a long string would repeat it whole.
func short(err error) string {
	if err == nil {
		return "<nil>"
	}
	s := err.Error()
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

func at(path string) string {
	if path == "" {
		return "/"
	}
	return path
}
