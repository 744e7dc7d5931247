package preset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/openclaw/occ/internal/problem"
)

// Variable types.
const (
	TypeString   = "string"
	TypeNumber   = "number"
	TypeBoolean  = "boolean"
	TypePassword = "password"
)

// Limits (upstream's): a template and its rendering each, and one workspace file after rendering.
const (
	MaxBytes              = 1 << 20
	MaxDepth              = 64
	MaxWorkspaceFileBytes = 16 << 10
	maxDescriptionRunes   = 1000
)

// Harness authentication methods that read a credential, the only places a password may go.
var secretMethods = map[string]bool{"api_key": true, "codex_pat": true}

// WorkspaceFiles are the files agent.initialWorkspaceFiles may name.
var WorkspaceFiles = []string{"AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md"}

var (
	variableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	tokenInner   = regexp.MustCompile(`^vars\.([A-Za-z_][A-Za-z0-9_]*)$`)
)

// passwordPointer is the one place a password variable may be used, as a whole token.
const passwordPointer = "/agent/harnessAuth/secret"

// Error is a refused template or input. Pointer is the JSON Pointer inside the template;
// Message names the template path and what it accepts, never the submitted value.
type Error struct {
	Pointer string
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

func fail(pointer, code, format string, args ...any) *Error {
	return &Error{Pointer: pointer, Code: code, Message: "Preset " + dotted(pointer) + ": " + fmt.Sprintf(format, args...)}
}

// dotted spells a JSON Pointer as a template path: variables.model, agent.pluginApprovers[0].
func dotted(pointer string) string {
	if pointer == "" {
		return "template"
	}
	var b strings.Builder
	for i, token := range strings.Split(pointer[1:], "/") {
		token = strings.NewReplacer("~1", "/", "~0", "~").Replace(token)
		switch {
		case isIndex(token):
			b.WriteString("[" + token + "]")
		case plainKey(token):
			if i > 0 {
				b.WriteString(".")
			}
			b.WriteString(token)
		default:
			if utf8.RuneCountInString(token) > 64 {
				token = string([]rune(token)[:64]) + "…"
			}
			b.WriteString("[" + strconv.QuoteToASCII(token) + "]")
		}
	}
	return b.String()
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func plainKey(s string) bool {
	if s == "" || utf8.RuneCountInString(s) > 64 || isIndex(s) {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

func pointerOf(parent, key string) string {
	return parent + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}

// Variable is one declared input.
type Variable struct {
	Type        string
	Description string
	// Default is a string, json.Number or bool of Type; nil when there is none.
	Default any
}

// Template is a checked template: its variables and its launch settings as decoded JSON
// (objects are map[string]any, numbers json.Number).
type Template struct {
	Variables map[string]Variable
	// settings holds "agent" and "configuration" when present.
	settings map[string]any
	// referenced lists the variables a token names.
	referenced map[string]bool
}

// decode reads one JSON value with exact numbers, refusing trailing data, more than MaxBytes
// and more than MaxDepth levels.
func decode(data []byte) (any, error) {
	if len(data) > MaxBytes {
		return nil, fail("", problem.DetailTooLong, "must not be larger than 1 MiB.")
	}
	if depth(data) > MaxDepth {
		return nil, fail("", problem.DetailTooDeep, "must not nest more than 64 levels.")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fail("", problem.DetailInvalidType, "must be a JSON object.")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fail("", problem.DetailInvalidType, "must be one JSON object.")
	}
	return v, nil
}

// depth counts the deepest nesting of objects and arrays, outside strings.
func depth(data []byte) int {
	deepest, level, inString, escaped := 0, 0, false, false
	for _, c := range data {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			level++
			deepest = max(deepest, level)
		case c == '}' || c == ']':
			level--
		}
	}
	return deepest
}

// Parse checks a template's structure, variables and tokens (the rules of a Preset write).
func Parse(data []byte) (*Template, error) {
	v, err := decode(data)
	if err != nil {
		return nil, err
	}
	return parseValue(v)
}

func parseValue(v any) (*Template, error) {
	root, ok := v.(map[string]any)
	if !ok {
		return nil, fail("", problem.DetailInvalidType, "must be a JSON object.")
	}
	t := &Template{Variables: map[string]Variable{}, settings: map[string]any{}, referenced: map[string]bool{}}
	for _, k := range sortedKeys(root) {
		switch k {
		case "variables":
			if err := t.parseVariables(root[k]); err != nil {
				return nil, err
			}
		case "agent", "configuration":
			t.settings[k] = root[k]
		default:
			return nil, fail(pointerOf("", k), problem.DetailUnknownField, "is not a template field (variables, agent, configuration).")
		}
	}
	if a, ok := t.settings["agent"]; ok {
		if err := checkAgent(a); err != nil {
			return nil, err
		}
	}
	if c, ok := t.settings["configuration"]; ok {
		if err := checkConfiguration(c); err != nil {
			return nil, err
		}
	}
	for _, k := range sortedKeys(t.settings) {
		if err := t.checkTokens(t.settings[k], pointerOf("", k)); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *Template) parseVariables(v any) error {
	vars, ok := v.(map[string]any)
	if !ok {
		return fail("/variables", problem.DetailInvalidType, "must be an object of variable definitions.")
	}
	for _, name := range sortedKeys(vars) {
		p := pointerOf("/variables", name)
		if !variableName.MatchString(name) {
			return fail(p, problem.DetailInvalidFormat, "a variable name matches [A-Za-z_][A-Za-z0-9_]*.")
		}
		def, ok := vars[name].(map[string]any)
		if !ok {
			return fail(p, problem.DetailInvalidType, "must be an object {type, description?, default?}.")
		}
		var variable Variable
		typ, ok := def["type"].(string)
		switch {
		case def["type"] == nil:
			return fail(pointerOf(p, "type"), problem.DetailRequired, "is required: string, number, boolean or password.")
		case !ok || (typ != TypeString && typ != TypeNumber && typ != TypeBoolean && typ != TypePassword):
			return fail(pointerOf(p, "type"), problem.DetailInvalidValue, "must be string, number, boolean or password.")
		}
		variable.Type = typ
		for _, k := range sortedKeys(def) {
			switch k {
			case "type":
			case "description":
				d, ok := def[k].(string)
				if !ok || utf8.RuneCountInString(d) > maxDescriptionRunes || strings.ContainsRune(d, 0) {
					return fail(pointerOf(p, k), problem.DetailInvalidType, "must be text of at most 1000 characters.")
				}
				variable.Description = d
			case "default":
				if typ == TypePassword {
					return fail(pointerOf(p, k), problem.DetailInvalidValue, "a password variable has no stored default.")
				}
				value, err := typed(typ, def[k], pointerOf(p, k))
				if err != nil {
					return err
				}
				variable.Default = value
			default:
				return fail(pointerOf(p, k), problem.DetailUnknownField, "is not a variable field (type, description, default).")
			}
		}
		t.Variables[name] = variable
	}
	return nil
}

// typed checks that value is of the variable type and returns it as string, json.Number or bool.
func typed(typ string, value any, pointer string) (any, error) {
	switch typ {
	case TypeString, TypePassword:
		if s, ok := value.(string); ok {
			return s, nil
		}
		return nil, fail(pointer, problem.DetailInvalidType, "expects a string.")
	case TypeBoolean:
		if b, ok := value.(bool); ok {
			return b, nil
		}
		return nil, fail(pointer, problem.DetailInvalidType, "expects a boolean.")
	}
	var n json.Number
	switch x := value.(type) {
	case json.Number:
		n = x
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, fail(pointer, problem.DetailInvalidType, "expects a finite number.")
		}
		n = json.Number(strconv.FormatFloat(x, 'g', -1, 64))
	case int:
		n = json.Number(strconv.Itoa(x))
	default:
		return nil, fail(pointer, problem.DetailInvalidType, "expects a finite number.")
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fail(pointer, problem.DetailInvalidType, "expects a finite number.")
	}
	return n, nil
}

// checkAgent applies the structure of template.agent. Launch fields keep their ordinary
// validation for the Agent request; only credential bindings and workspace files are checked here.
func checkAgent(v any) error {
	agent, ok := v.(map[string]any)
	if !ok {
		return fail("/agent", problem.DetailInvalidType, "must be an object.")
	}
	for _, k := range sortedKeys(agent) {
		p := pointerOf("/agent", k)
		switch k {
		case "name", "executionMode", "backendId", "plugins", "pluginApprovers":
		case "harnessAuth":
			if err := checkHarnessAuth(agent[k]); err != nil {
				return err
			}
		case "initialWorkspaceFiles":
			files, ok := agent[k].(map[string]any)
			if !ok {
				return fail(p, problem.DetailInvalidType, "must be an object of file contents.")
			}
			for _, name := range sortedKeys(files) {
				fp := pointerOf(p, name)
				if !contains(WorkspaceFiles, name) {
					return fail(fp, problem.DetailUnknownField, "is not a workspace file (AGENTS.md, SOUL.md, IDENTITY.md, USER.md).")
				}
				if err := checkWorkspaceFile(files[name], fp); err != nil {
					return err
				}
			}
		default:
			return fail(p, problem.DetailUnknownField,
				"is not an Agent template field (name, executionMode, backendId, harnessAuth, initialWorkspaceFiles, plugins, pluginApprovers).")
		}
	}
	return nil
}

func checkWorkspaceFile(v any, pointer string) error {
	s, ok := v.(string)
	if !ok {
		return fail(pointer, problem.DetailInvalidType, "must be text.")
	}
	if strings.ContainsRune(s, 0) || !utf8.ValidString(s) {
		return fail(pointer, problem.DetailInvalidValue, "must be valid Unicode text without NUL.")
	}
	if len(s) > MaxWorkspaceFileBytes {
		return fail(pointer, problem.DetailTooLong, "must be at most 16 KiB of UTF-8.")
	}
	return nil
}

func checkHarnessAuth(v any) error {
	const p = "/agent/harnessAuth"
	if v == nil {
		return nil
	}
	ha, ok := v.(map[string]any)
	if !ok {
		return fail(p, problem.DetailInvalidType, "must be an object {method, source?, secret?} or null.")
	}
	for _, k := range sortedKeys(ha) {
		switch k {
		case "method":
			if _, ok := ha[k].(string); !ok {
				return fail(p+"/method", problem.DetailInvalidType, "must be runtime, api_key or codex_pat.")
			}
		case "source":
			if err := checkRef(ha[k], p+"/source"); err != nil {
				return err
			}
		case "secret":
			method, _ := ha["method"].(string)
			if !secretMethods[method] {
				return fail(p+"/secret", problem.DetailInvalidValue, "a password goes only with method api_key or codex_pat.")
			}
			if _, ok := ha["source"]; ok {
				return fail(p+"/secret", problem.DetailInvalidValue, "excludes source: the Agent reads one credential.")
			}
			s, _ := ha[k].(string)
			segs, err := segments(s, p+"/secret")
			if err != nil {
				return err
			}
			if len(segs) != 1 || !segs[0].token {
				return fail(p+"/secret", problem.DetailInvalidValue, "takes only a whole password variable token, never a credential.")
			}
		default:
			return fail(pointerOf(p, k), problem.DetailUnknownField, "is not a harnessAuth field (method, source, secret).")
		}
	}
	return nil
}

// checkRef checks the structure of a credential reference; namespaceId may be omitted.
func checkRef(v any, pointer string) error {
	ref, ok := v.(map[string]any)
	if !ok {
		return fail(pointer, problem.DetailInvalidType, "must be a reference {kind, namespaceId?, id}.")
	}
	for _, k := range sortedKeys(ref) {
		if k != "kind" && k != "namespaceId" && k != "id" {
			return fail(pointerOf(pointer, k), problem.DetailUnknownField, "is not a reference field (kind, namespaceId, id).")
		}
		if _, ok := ref[k].(string); !ok {
			return fail(pointerOf(pointer, k), problem.DetailInvalidType, "must be text.")
		}
	}
	for _, k := range []string{"kind", "id"} {
		if _, ok := ref[k]; !ok {
			return fail(pointerOf(pointer, k), problem.DetailRequired, "is required.")
		}
	}
	return nil
}

func checkConfiguration(v any) error {
	cfg, ok := v.(map[string]any)
	if !ok {
		return fail("/configuration", problem.DetailInvalidType, "must be an object {values?, secretBindings?}.")
	}
	for _, k := range sortedKeys(cfg) {
		p := pointerOf("/configuration", k)
		switch k {
		case "values":
			if _, ok := cfg[k].(map[string]any); !ok {
				return fail(p, problem.DetailInvalidType, "must be the native JSON object.")
			}
		case "secretBindings":
			bindings, ok := cfg[k].(map[string]any)
			if !ok {
				return fail(p, problem.DetailInvalidType, "must be an object of Secret bindings.")
			}
			for _, name := range sortedKeys(bindings) {
				bp := pointerOf(p, name)
				b, ok := bindings[name].(map[string]any)
				if !ok {
					return fail(bp, problem.DetailInvalidType, "must be a binding {source, delivery?}.")
				}
				for _, bk := range sortedKeys(b) {
					switch bk {
					case "source":
						if err := checkRef(b[bk], pointerOf(bp, bk)); err != nil {
							return err
						}
					case "delivery":
					default:
						return fail(pointerOf(bp, bk), problem.DetailUnknownField, "is not a binding field (source, delivery).")
					}
				}
				if _, ok := b["source"]; !ok {
					return fail(pointerOf(bp, "source"), problem.DetailRequired, "is required.")
				}
			}
		default:
			return fail(p, problem.DetailUnknownField, "is not a Configuration template field (values, secretBindings).")
		}
	}
	return nil
}

// checkTokens walks the launch settings: every token names a declared variable, a password only
// as the whole harnessAuth secret, embedded tokens only string variables, and object keys carry
// string tokens only inside configuration.values.
func (t *Template) checkTokens(v any, pointer string) error {
	switch x := v.(type) {
	case string:
		segs, err := segments(x, pointer)
		if err != nil {
			return err
		}
		whole := len(segs) == 1 && segs[0].token
		for _, s := range segs {
			if !s.token {
				continue
			}
			variable, ok := t.Variables[s.text]
			if !ok {
				return fail(pointer, problem.DetailInvalidValue, "names an undeclared variable.")
			}
			t.referenced[s.text] = true
			switch {
			case variable.Type == TypePassword && (pointer != passwordPointer || !whole):
				return fail(pointer, problem.DetailInvalidValue, "a password variable goes only, as a whole token, in agent.harnessAuth.secret.")
			case variable.Type != TypePassword && pointer == passwordPointer:
				return fail(pointer, problem.DetailInvalidValue, "takes only a password variable.")
			case !whole && variable.Type != TypeString:
				return fail(pointer, problem.DetailInvalidValue, "a token inside other text needs a string variable.")
			}
		}
	case map[string]any:
		inValues := strings.HasPrefix(pointer, "/configuration/values")
		for _, k := range sortedKeys(x) {
			p := pointerOf(pointer, k)
			segs, err := segments(k, p)
			if err != nil {
				return err
			}
			for _, s := range segs {
				if !s.token {
					continue
				}
				if !inValues {
					return fail(p, problem.DetailInvalidValue, "a field name varies only inside configuration.values.")
				}
				variable, ok := t.Variables[s.text]
				if !ok {
					return fail(p, problem.DetailInvalidValue, "names an undeclared variable.")
				}
				if variable.Type != TypeString {
					return fail(p, problem.DetailInvalidValue, "a key takes only string variables.")
				}
				t.referenced[s.text] = true
			}
			if err := t.checkTokens(x[k], p); err != nil {
				return err
			}
		}
	case []any:
		for i, item := range x {
			if err := t.checkTokens(item, pointer+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// segment is literal text or the name of a variable token.
type segment struct {
	text  string
	token bool
}

// segments splits s into literal text and {{ vars.name }} tokens. Other {{ … }} text stays
// literal; a backslash before a vars expression keeps it literal (and is dropped); a malformed
// vars expression is refused.
func segments(s, pointer string) ([]segment, error) {
	var out []segment
	var lit strings.Builder
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "{{")
		if j < 0 {
			lit.WriteString(s[i:])
			break
		}
		j += i
		inner, end, isVars := varsExpression(s, j)
		if !isVars {
			lit.WriteString(s[i : j+2])
			i = j + 2
			continue
		}
		escaped := j > i && s[j-1] == '\\'
		if escaped {
			lit.WriteString(s[i : j-1])
			if end < 0 {
				lit.WriteString(s[j:])
				break
			}
			lit.WriteString(s[j:end])
			i = end
			continue
		}
		m := tokenInner.FindStringSubmatch(inner)
		if end < 0 || m == nil {
			return nil, fail(pointer, problem.DetailInvalidFormat, "a vars expression is {{ vars.NAME }}: no filters, paths or other expressions.")
		}
		lit.WriteString(s[i:j])
		if lit.Len() > 0 {
			out = append(out, segment{text: lit.String()})
			lit.Reset()
		}
		out = append(out, segment{text: m[1], token: true})
		i = end
	}
	if lit.Len() > 0 || len(out) == 0 {
		out = append(out, segment{text: lit.String()})
	}
	return out, nil
}

// varsExpression reads the expression opened by "{{" at j: its trimmed inner text, the index
// after its closing "}}" (-1 when unclosed), and whether it is a vars expression at all.
func varsExpression(s string, j int) (string, int, bool) {
	rest := s[j+2:]
	k := strings.Index(rest, "}}")
	body := rest
	end := -1
	if k >= 0 {
		body = rest[:k]
		end = j + 2 + k + 2
	}
	inner := strings.TrimSpace(body)
	if !strings.HasPrefix(inner, "vars") {
		return inner, end, false
	}
	if len(inner) > 4 {
		c := inner[4]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' {
			return inner, end, false
		}
	}
	return inner, end, true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
