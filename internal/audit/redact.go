package audit

import (
	"bytes"
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/openclaw/occ/internal/obs"
)

// Redacted replaces a value that must not be stored.
const Redacted = obs.Redacted

// maxDepth is the deepest nesting kept: the value passed to Redact is at depth 0, a
// value inside N objects or arrays is at depth N, and anything deeper than 16 becomes
// Redacted.
const maxDepth = 16

// sensitiveKeyParts are the key families of credential-bearing names with "_" and "-" removed. A
// key is sensitive when its lower-cased form, with every "_" and "-" removed, contains one of them
// anywhere: "accessToken", "x-api-key", "Set-Cookie", "messageBody" and "context" (it contains
// "text") all are. Substring matching over-redacts on purpose; the suffix exception below keeps
// identifiers and counts.
var sensitiveKeyParts = []string{
	"accesstoken", "apikey", "authorization", "bearer", "clientsecret", "cookie", "credential",
	"password", "privatekey", "providercredential", "providertoken", "refreshtoken", "secret",
	"sessioncookie", "sessiontoken", "token", "body", "content", "message", "prompt", "text",
	"transcript",
}

// exemptSuffixes keep a key's value even when the key is sensitive: "serviceKeyId",
// "secretRef", "secretName", "tokenCount", "credentialKind" describe a secret without
// being one. Matched case-insensitively at the end of the key as written.
var exemptSuffixes = []string{"id", "ids", "ref", "reference", "name", "names", "kind", "count"}

// droppedKeys are removed with their values (prototype-pollution keys of the JSON
// documents these details may be read back into).
var droppedKeys = map[string]bool{"__proto__": true, "constructor": true, "prototype": true}

var separatorRemover = strings.NewReplacer("_", "", "-", "")

func sensitiveKey(key string) bool {
	lower := strings.ToLower(key)
	for _, suffix := range exemptSuffixes {
		if strings.HasSuffix(lower, suffix) {
			return false
		}
	}
	normalized := separatorRemover.Replace(lower)
	for _, part := range sensitiveKeyParts {
		if strings.Contains(normalized, part) {
			return true
		}
	}
	return false
}

// Redact returns a JSON-ready copy of v with audit redaction applied:
//
//   - object members whose key is sensitive (see sensitiveKeyParts and exemptSuffixes)
//     keep their key but their value, whatever it is, becomes "[REDACTED]";
//   - members named __proto__, constructor or prototype are dropped, and so are
//     members whose key holds a credential pattern; control characters in keys become
//     spaces;
//   - in strings, control characters become spaces, then every credential pattern
//     recognised by obs.ScrubSecrets (Bearer tokens, sk-…, ghp_/ghp-…, gho…, xox?-…,
//     GitHub PATs, AWS key ids, PEM private-key blocks) becomes "[REDACTED]";
//   - anything nested deeper than 16 levels, and any reference cycle, becomes
//     "[REDACTED]";
//   - an error becomes {"name": <its Go type>, "reason": "[REDACTED]"}, never its text;
//   - numbers and booleans are kept (non-finite floats become null); byte slices,
//     channels, functions and complex numbers become "[REDACTED]"; structs and values
//     with their own JSON or text encoding are converted through encoding/json first
//     and then redacted like any other object or string; maps need string or integer
//     keys, else the whole map becomes "[REDACTED]".
//
// Objects come back as map[string]any and arrays as []any.
func Redact(v any) any {
	r := redactor{onPath: map[visit]bool{}}
	return r.value(v, 0)
}

type visit struct {
	ptr uintptr
	typ reflect.Type
	len int
}

type redactor struct {
	onPath map[visit]bool
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

func (r *redactor) value(v any, depth int) any {
	if depth > maxDepth {
		return Redacted
	}
	switch x := v.(type) {
	case nil:
		return nil
	case error:
		return map[string]any{"name": errorName(x), "reason": Redacted}
	case json.Number:
		if _, err := strconv.ParseFloat(string(x), 64); err == nil && json.Valid([]byte(x)) {
			return x
		}
		return redactString(string(x))
	case string:
		return redactString(x)
	case bool:
		return x
	}
	rv := reflect.ValueOf(v)
	if rv.Type().Implements(jsonMarshalerType) || rv.Type().Implements(textMarshalerType) {
		if rv.Kind() == reflect.Pointer && rv.IsNil() {
			return nil
		}
		return r.viaJSON(v, depth)
	}
	switch rv.Kind() {
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint()
	case reflect.Float32, reflect.Float64:
		if f := rv.Float(); !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f
		}
		return nil
	case reflect.String:
		return redactString(rv.String())
	case reflect.Pointer:
		if rv.IsNil() {
			return nil
		}
		return r.enter(rv, 0, func() any { return r.value(rv.Elem().Interface(), depth) })
	case reflect.Map:
		if rv.IsNil() {
			return nil
		}
		return r.enter(rv, 0, func() any { return r.object(rv, depth) })
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return Redacted
		}
		if rv.IsNil() {
			return nil
		}
		return r.enter(rv, rv.Len(), func() any { return r.array(rv, depth) })
	case reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return Redacted
		}
		return r.array(rv, depth)
	case reflect.Struct:
		return r.viaJSON(v, depth)
	default: // chan, func, complex, unsafe pointer
		return Redacted
	}
}

// enter runs f with rv marked as being on the current path; meeting it again below
// is a cycle.
func (r *redactor) enter(rv reflect.Value, n int, f func() any) any {
	key := visit{ptr: uintptr(rv.UnsafePointer()), typ: rv.Type(), len: n}
	if r.onPath[key] {
		return Redacted
	}
	r.onPath[key] = true
	defer delete(r.onPath, key)
	return f()
}

func (r *redactor) object(rv reflect.Value, depth int) any {
	type member struct {
		key   string
		value reflect.Value
	}
	members := make([]member, 0, rv.Len())
	iter := rv.MapRange()
	for iter.Next() {
		k := iter.Key()
		var key string
		switch k.Kind() {
		case reflect.String:
			key = k.String()
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			key = strconv.FormatInt(k.Int(), 10)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			key = strconv.FormatUint(k.Uint(), 10)
		default:
			return Redacted
		}
		members = append(members, member{key, iter.Value()})
	}
	// Sorted, so that keys colliding after control-character replacement resolve the
	// same way every time.
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	out := make(map[string]any, len(members))
	for _, m := range members {
		if droppedKeys[m.key] {
			continue
		}
		key := replaceControls(m.key)
		if obs.ScrubSecrets(key) != key {
			continue
		}
		if sensitiveKey(key) {
			out[key] = Redacted
			continue
		}
		out[key] = r.value(m.value.Interface(), depth+1)
	}
	return out
}

func (r *redactor) array(rv reflect.Value, depth int) any {
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = r.value(rv.Index(i).Interface(), depth+1)
	}
	return out
}

// viaJSON converts v with encoding/json (honouring its struct tags and marshalers)
// and redacts the result at the same depth. A value that cannot be encoded becomes
// Redacted.
func (r *redactor) viaJSON(v any, depth int) any {
	b, err := json.Marshal(v)
	if err != nil {
		return Redacted
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return Redacted
	}
	return r.value(generic, depth)
}

// redactString replaces control characters with spaces, then scrubs credentials.
func redactString(s string) string {
	return obs.ScrubSecrets(replaceControls(s))
}

func replaceControls(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// errorName is the error's Go type without pointer marks, e.g. "fs.PathError".
func errorName(err error) string {
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if name := t.String(); name != "" {
		return name
	}
	return "error"
}
