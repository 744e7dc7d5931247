package preset

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func mustParse(t *testing.T, template string) *Template {
	t.Helper()
	tpl, err := Parse([]byte(template))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return tpl
}

func asJSON(t *testing.T, r Rendered) string {
	t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestRender is a table of upstream's rendering rules.
func TestRender(t *testing.T) {
	const vars = `"variables": {
		"name": {"type": "string"},
		"model": {"type": "string", "default": "openai/gpt-5.1"},
		"count": {"type": "number", "default": 2},
		"on": {"type": "boolean", "default": true},
		"key": {"type": "password"}}`
	cases := []struct {
		name     string
		settings string
		inputs   map[string]any
		want     string
	}{
		{"whole string token keeps the string", `"agent": {"name": "{{ vars.name }}"}`, map[string]any{"name": "a1"},
			`{"agent":{"name":"a1"}}`},
		{"whole string token keeps a number", `"configuration": {"values": {"n": "{{ vars.count }}"}}`, nil,
			`{"configuration":{"values":{"n":2}}}`},
		{"whole string token keeps a boolean", `"configuration": {"values": {"b": "{{vars.on}}"}}`, nil,
			`{"configuration":{"values":{"b":true}}}`},
		{"embedded token stays a string", `"agent": {"name": "worker-{{ vars.name }}"}`, map[string]any{"name": "x"},
			`{"agent":{"name":"worker-x"}}`},
		{"default used when omitted", `"configuration": {"values": {"m": "{{ vars.model }}"}}`, nil,
			`{"configuration":{"values":{"m":"openai/gpt-5.1"}}}`},
		{"false overrides a default", `"configuration": {"values": {"b": "{{ vars.on }}"}}`, map[string]any{"on": false},
			`{"configuration":{"values":{"b":false}}}`},
		{"0 overrides a default", `"configuration": {"values": {"n": "{{ vars.count }}"}}`, map[string]any{"count": json.Number("0")},
			`{"configuration":{"values":{"n":0}}}`},
		{"empty string overrides a default", `"configuration": {"values": {"m": "{{ vars.model }}"}}`, map[string]any{"model": ""},
			`{"configuration":{"values":{"m":""}}}`},
		{"one pass: an input that looks like a token stays data", `"agent": {"name": "{{ vars.name }}"}`,
			map[string]any{"name": "{{ vars.model }}"}, `{"agent":{"name":"{{ vars.model }}"}}`},
		{"quotes in inputs stay data", `"agent": {"name": "a-{{ vars.name }}"}`, map[string]any{"name": `"}`},
			`{"agent":{"name":"a-\"}"}}`},
		{"other placeholders stay literal", `"configuration": {"values": {"e": "${NAME} {{ other }} {{variables}}"}}`, nil,
			`{"configuration":{"values":{"e":"${NAME} {{ other }} {{variables}}"}}}`},
		{"a backslash keeps a token literal", `"configuration": {"values": {"e": "\\{{ vars.name }}"}}`, nil,
			`{"configuration":{"values":{"e":"{{ vars.name }}"}}}`},
		{"keys of configuration.values render", `"configuration": {"values": {"models": {"{{ vars.name }}": {"x": 1}}}}`,
			map[string]any{"name": "m1"}, `{"configuration":{"values":{"models":{"m1":{"x":1}}}}}`},
		{"a password goes into harnessAuth.secret", `"agent": {"harnessAuth": {"method": "api_key", "secret": "{{ vars.key }}"}}`,
			map[string]any{"key": "s3"}, `{"agent":{"harnessAuth":{"method":"api_key","secret":"s3"}}}`},
		{"arrays render", `"agent": {"pluginApprovers": ["u-{{ vars.name }}"]}`, map[string]any{"name": "x"},
			`{"agent":{"pluginApprovers":["u-x"]}}`},
		{"an unreferenced variable without a default needs no input", `"agent": {"executionMode": "embedded"}`, nil,
			`{"agent":{"executionMode":"embedded"}}`},
		{"an empty template renders nothing", ``, nil, `{}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := vars
			if c.settings != "" {
				body += ", " + c.settings
			}
			r, err := mustParse(t, "{"+body+"}").Render(c.inputs)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			var got, want any
			_ = json.Unmarshal([]byte(asJSON(t, r)), &got)
			_ = json.Unmarshal([]byte(c.want), &want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("rendered %s, want %s", asJSON(t, r), c.want)
			}
		})
	}
}

// TestRefusals: each refusal names the template path, never the submitted value.
func TestRefusals(t *testing.T) {
	const secret = "sk-DO-NOT-ECHO"
	parse := []struct {
		name, template, path string
	}{
		{"bad variable name", `{"variables": {"1x": {"type": "string"}}}`, "variables.1x"},
		{"unknown type", `{"variables": {"x": {"type": "date"}}}`, "variables.x.type"},
		{"default of the wrong type", `{"variables": {"n": {"type": "number", "default": "` + secret + `"}}}`, "variables.n.default"},
		{"password with a default", `{"variables": {"p": {"type": "password", "default": "` + secret + `"}}}`, "variables.p.default"},
		{"unknown template field", `{"agents": {}}`, "agents"},
		{"undeclared variable", `{"agent": {"name": "{{ vars.nope }}"}}`, "agent.name"},
		{"malformed vars expression", `{"variables": {"x": {"type": "string"}}, "agent": {"name": "{{ vars.x | upper }}"}}`, "agent.name"},
		{"unclosed vars expression", `{"variables": {"x": {"type": "string"}}, "agent": {"name": "{{ vars.x"}}`, "agent.name"},
		{"nested path", `{"variables": {"x": {"type": "string"}}, "agent": {"name": "{{ vars.x.y }}"}}`, "agent.name"},
		{"password outside the secret",
			`{"variables": {"p": {"type": "password"}}, "configuration": {"values": {"k": "{{ vars.p }}"}}}`, "configuration.values.k"},
		{"password embedded in the secret",
			`{"variables": {"p": {"type": "password"}}, "agent": {"harnessAuth": {"method": "api_key", "secret": "x{{ vars.p }}"}}}`,
			"agent.harnessAuth.secret"},
		{"password in a workspace file",
			`{"variables": {"p": {"type": "password"}}, "agent": {"initialWorkspaceFiles": {"USER.md": "{{ vars.p }}"}}}`,
			"agent.initialWorkspaceFiles.USER.md"},
		{"a credential literal in the secret", `{"agent": {"harnessAuth": {"method": "api_key", "secret": "` + secret + `"}}}`,
			"agent.harnessAuth.secret"},
		{"a secret with method runtime",
			`{"variables": {"p": {"type": "password"}}, "agent": {"harnessAuth": {"method": "runtime", "secret": "{{ vars.p }}"}}}`,
			"agent.harnessAuth.secret"},
		{"a number embedded in text", `{"variables": {"n": {"type": "number"}}, "agent": {"name": "a{{ vars.n }}"}}`, "agent.name"},
		{"a token in a schema key", `{"variables": {"x": {"type": "string"}}, "agent": {"{{ vars.x }}": 1}}`, "agent[\"{{ vars.x }}\"]"},
		{"a number variable in a key",
			`{"variables": {"n": {"type": "number"}}, "configuration": {"values": {"{{ vars.n }}": 1}}}`, "configuration.values[\"{{ vars.n }}\"]"},
		{"an unknown workspace file", `{"agent": {"initialWorkspaceFiles": {"HACK.md": ""}}}`, "agent.initialWorkspaceFiles.HACK.md"},
		{"a workspace file too large", `{"agent": {"initialWorkspaceFiles": {"USER.md": "` + strings.Repeat("a", MaxWorkspaceFileBytes+1) + `"}}}`,
			"agent.initialWorkspaceFiles.USER.md"},
		{"a binding without source", `{"configuration": {"secretBindings": {"K": {}}}}`, "configuration.secretBindings.K.source"},
		{"too deep", `{"configuration": {"values": ` + strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 70) + `}}`, "template"},
		{"not an object", `[]`, "template"},
	}
	for _, c := range parse {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.template))
			if err == nil {
				t.Fatal("Parse accepted the template")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "Preset "+c.path+": ") {
				t.Fatalf("message %q does not start with the path %q", msg, c.path)
			}
			if strings.Contains(msg, secret) {
				t.Fatalf("message %q echoes the value", msg)
			}
		})
	}

	tpl := mustParse(t, `{"variables": {"n": {"type": "number"}, "s": {"type": "string"}, "b": {"type": "boolean"},
		"dup": {"type": "string"}},
		"configuration": {"values": {"n": "{{ vars.n }}", "s": "{{ vars.s }}", "b": "{{ vars.b }}", "k-{{ vars.dup }}": 1, "k-x": 2}}}`)
	render := []struct {
		name   string
		inputs map[string]any
		path   string
	}{
		{"unknown input", map[string]any{"nope": 1, "n": 1, "s": "", "b": true, "dup": "y"}, "variables.nope"},
		{"number given text", map[string]any{"n": secret, "s": "", "b": true, "dup": "y"}, "variables.n"},
		{"boolean given text", map[string]any{"n": 1, "s": "", "b": secret, "dup": "y"}, "variables.b"},
		{"string given a number", map[string]any{"n": 1, "s": 5, "b": true, "dup": "y"}, "variables.s"},
		{"missing required input", map[string]any{"s": "", "b": true, "dup": "y"}, "variables.n"},
		{"duplicate rendered keys", map[string]any{"n": 1, "s": "", "b": true, "dup": "x"}, "configuration.values[\"k-{{ vars.dup }}\"]"},
	}
	for _, c := range render {
		t.Run(c.name, func(t *testing.T) {
			_, err := tpl.Render(c.inputs)
			if err == nil {
				t.Fatal("Render accepted the inputs")
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "Preset "+c.path+": ") || strings.Contains(msg, secret) {
				t.Fatalf("message %q: want the path %q and no value", msg, c.path)
			}
		})
	}
}

func TestRenderedWorkspaceFileLimit(t *testing.T) {
	tpl := mustParse(t, `{"variables": {"x": {"type": "string"}}, "agent": {"initialWorkspaceFiles": {"USER.md": "a{{ vars.x }}"}}}`)
	if _, err := tpl.Render(map[string]any{"x": strings.Repeat("b", MaxWorkspaceFileBytes)}); err == nil ||
		!strings.HasPrefix(err.Error(), `Preset agent.initialWorkspaceFiles.USER.md: `) {
		t.Fatalf("Render = %v, want the file's limit", err)
	}
}

func TestInput(t *testing.T) {
	tpl := mustParse(t, `{"variables": {"n": {"type": "number"}, "b": {"type": "boolean"}, "s": {"type": "string"}}}`)
	for _, c := range []struct {
		name, text string
		want       any
		ok         bool
	}{
		{"n", "2.5", json.Number("2.5"), true}, {"n", "x", nil, false}, {"n", "1e999", nil, false},
		{"b", "true", true, true}, {"b", "false", false, true}, {"b", "yes", nil, false},
		{"s", "12", "12", true}, {"missing", "1", nil, false},
	} {
		got, err := tpl.Input(c.name, c.text)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("Input(%s, %q) = %v, %v", c.name, c.text, got, err)
		}
	}
}

func TestFillNamespace(t *testing.T) {
	out, err := FillNamespace([]byte(`{"agent": {"harnessAuth": {"method": "api_key", "source": {"kind": "secret", "id": "sec_1"}}},
		"configuration": {"secretBindings": {"K": {"source": {"kind": "secret", "namespaceId": "ns_a", "id": "sec_2"}}}}}`), "ns_a")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"source":{"id":"sec_1","kind":"secret","namespaceId":"ns_a"}`) {
		t.Fatalf("FillNamespace = %s", out)
	}
	_, err = FillNamespace([]byte(`{"configuration": {"secretBindings": {"K": {"source": {"kind": "secret", "namespaceId": "ns_b", "id": "sec_2"}}}}}`), "ns_a")
	if err == nil || !strings.HasPrefix(err.Error(), "Preset configuration.secretBindings.K.source.namespaceId: ") {
		t.Fatalf("cross-Namespace reference: %v", err)
	}
}

func TestBundled(t *testing.T) {
	got := Bundled()
	if len(got) != 2 {
		t.Fatalf("Bundled() has %d Presets, want the embedded OpenClaw and the dedicated Codex ones", len(got))
	}
	for _, d := range got {
		tpl := mustParse(t, string(d.Template))
		r, err := tpl.Render(map[string]any{"name": "a1", "apiKey": "k"})
		if err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		if r.Agent["name"] != "a1" || r.Agent["harnessAuth"].(map[string]any)["secret"] != "k" {
			t.Fatalf("%s rendered %v", d.Name, r.Agent)
		}
	}
}

// FuzzRender: any template Parse accepts renders with any string inputs without panicking, and
// renders to JSON within the limits; refusals are *Error with a path-first message.
func FuzzRender(f *testing.F) {
	f.Add(`{"variables": {"x": {"type": "string"}}, "agent": {"name": "{{ vars.x }}"}}`, "v")
	f.Add(`{"variables": {"x": {"type": "string"}}, "configuration": {"values": {"{{vars.x}}-k": "\\{{ vars.x }} {{ y }}"}}}`, "}}")
	f.Add(`{"variables": {"n": {"type": "number", "default": 1}}, "configuration": {"values": {"a": ["{{ vars.n }}"]}}}`, "2")
	f.Fuzz(func(t *testing.T, template, input string) {
		tpl, err := Parse([]byte(template))
		if err != nil {
			if _, ok := err.(*Error); !ok || !strings.HasPrefix(err.Error(), "Preset ") {
				t.Fatalf("Parse refusal %T %q", err, err)
			}
			return
		}
		inputs := map[string]any{}
		for name, v := range tpl.Variables {
			if value, err := tpl.Input(name, input); err == nil && v.Type != "" {
				inputs[name] = value
			}
		}
		r, err := tpl.Render(inputs)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Render refusal %T", err)
			}
			return
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("rendered JSON: %v", err)
		}
	})
}
