package preset

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/openclaw/occ/internal/problem"
)

// Rendered is a template's launch settings with every token replaced: the "agent" and
// "configuration" members as JSON objects (nil when the template has none).
type Rendered struct {
	Agent         map[string]any `json:"agent,omitempty"`
	Configuration map[string]any `json:"configuration,omitempty"`
}

// Input converts a command-line text to the declared type of the variable: a number, true or
// false, or the text itself.
func (t *Template) Input(name, text string) (any, error) {
	p := pointerOf("/variables", name)
	variable, ok := t.Variables[name]
	if !ok {
		return nil, fail(p, problem.DetailUnknownField, "is not a declared variable.")
	}
	switch variable.Type {
	case TypeNumber:
		return typed(TypeNumber, json.Number(strings.TrimSpace(text)), p)
	case TypeBoolean:
		b, err := strconv.ParseBool(text)
		if err != nil || (text != "true" && text != "false") {
			return nil, fail(p, problem.DetailInvalidType, "expects a boolean (true or false).")
		}
		return b, nil
	}
	return text, nil
}

// Render replaces every token in one pass: a whole-string token becomes the variable's value
// with its type, an embedded one its text; quotes and braces in values stay data. Inputs are
// strings, json.Number (or float64, int) and bools; an omitted input uses the default, and a
// referenced variable with neither is refused.
func (t *Template) Render(inputs map[string]any) (Rendered, error) {
	values := map[string]any{}
	for _, name := range sortedKeys(inputs) {
		variable, ok := t.Variables[name]
		p := pointerOf("/variables", name)
		if !ok {
			return Rendered{}, fail(p, problem.DetailUnknownField, "is not a declared variable.")
		}
		v, err := typed(variable.Type, inputs[name], p)
		if err != nil {
			return Rendered{}, err
		}
		values[name] = v
	}
	for _, name := range sortedKeys(t.referenced) {
		if _, ok := values[name]; ok {
			continue
		}
		if d := t.Variables[name].Default; d != nil {
			values[name] = d
			continue
		}
		return Rendered{}, fail(pointerOf("/variables", name), problem.DetailRequired, "is required: the template uses it and it has no default.")
	}
	var out Rendered
	for _, k := range []string{"agent", "configuration"} {
		v, ok := t.settings[k]
		if !ok {
			continue
		}
		r, err := t.render(v, pointerOf("", k), values)
		if err != nil {
			return Rendered{}, err
		}
		if k == "agent" {
			out.Agent, _ = r.(map[string]any)
		} else {
			out.Configuration, _ = r.(map[string]any)
		}
	}
	data, err := json.Marshal(out)
	if err != nil {
		return Rendered{}, fail("", problem.DetailInvalidValue, "cannot be rendered as JSON.")
	}
	if len(data) > MaxBytes {
		return Rendered{}, fail("", problem.DetailTooLong, "renders larger than 1 MiB.")
	}
	if files, ok := out.Agent["initialWorkspaceFiles"].(map[string]any); ok {
		for _, name := range sortedKeys(files) {
			if err := checkWorkspaceFile(files[name], pointerOf("/agent/initialWorkspaceFiles", name)); err != nil {
				return Rendered{}, err
			}
		}
	}
	return out, nil
}

func (t *Template) render(v any, pointer string, values map[string]any) (any, error) {
	switch x := v.(type) {
	case string:
		return t.renderString(x, pointer, values, false)
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range sortedKeys(x) {
			p := pointerOf(pointer, k)
			key, err := t.renderString(k, p, values, true)
			if err != nil {
				return nil, err
			}
			ks, _ := key.(string)
			if _, dup := out[ks]; dup {
				return nil, fail(p, problem.DetailInvalidValue, "renders a key another key of the object also renders.")
			}
			r, err := t.render(x[k], p, values)
			if err != nil {
				return nil, err
			}
			out[ks] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			r, err := t.render(item, pointer+"/"+strconv.Itoa(i), values)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

func (t *Template) renderString(s, pointer string, values map[string]any, key bool) (any, error) {
	segs, err := segments(s, pointer)
	if err != nil {
		return nil, err
	}
	if len(segs) == 1 && segs[0].token && !key {
		return values[segs[0].text], nil
	}
	var b strings.Builder
	for _, seg := range segs {
		if !seg.token {
			b.WriteString(seg.text)
			continue
		}
		text, ok := values[seg.text].(string)
		if !ok {
			return nil, fail(pointer, problem.DetailInvalidValue, "a token inside other text needs a string variable.")
		}
		b.WriteString(text)
	}
	return b.String(), nil
}

// FillNamespace completes the credential references of a template for a write in namespaceID:
// a reference without namespaceId gets it; one naming another Namespace is refused. It returns
// the template to store.
func FillNamespace(data []byte, namespaceID string) (json.RawMessage, error) {
	v, err := decode(data)
	if err != nil {
		return nil, err
	}
	if _, err := parseValue(v); err != nil {
		return nil, err
	}
	root := v.(map[string]any)
	var refs []struct {
		ref     map[string]any
		pointer string
	}
	if agent, ok := root["agent"].(map[string]any); ok {
		if ha, ok := agent["harnessAuth"].(map[string]any); ok {
			if ref, ok := ha["source"].(map[string]any); ok {
				refs = append(refs, struct {
					ref     map[string]any
					pointer string
				}{ref, "/agent/harnessAuth/source"})
			}
		}
	}
	if cfg, ok := root["configuration"].(map[string]any); ok {
		if bindings, ok := cfg["secretBindings"].(map[string]any); ok {
			for _, name := range sortedKeys(bindings) {
				b := bindings[name].(map[string]any)
				refs = append(refs, struct {
					ref     map[string]any
					pointer string
				}{b["source"].(map[string]any), pointerOf("/configuration/secretBindings", name) + "/source"})
			}
		}
	}
	for _, r := range refs {
		ns, ok := r.ref["namespaceId"].(string)
		switch {
		case !ok:
			r.ref["namespaceId"] = namespaceID
		case ns == namespaceID, strings.Contains(ns, "{{"):
		default:
			return nil, fail(r.pointer+"/namespaceId", problem.DetailInvalidValue, "a Preset references credentials of its own Namespace only.")
		}
	}
	out, err := json.Marshal(root)
	if err != nil {
		return nil, fail("", problem.DetailInvalidValue, "cannot be stored as JSON.")
	}
	return out, nil
}
