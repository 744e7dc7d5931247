// Package schema is OCC's JSON Schema engine: the subset of JSON Schema 2020-12 that OCC's closed
// documents use, declared in Go. One value serves three purposes: it validates a decoded document
// into JSON-Pointer details (problem.Detail), it renders itself into a JSON Schema document (the
// OpenAPI document's schemas), and tests compile that rendering with an independent validator to
// check that both agree.
//
// It imports nothing of ours but problem.
package schema

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/openclaw/occ/internal/problem"
)

// Schema is one JSON Schema 2020-12 document.
//
// Objects are closed unless Open (additionalProperties: false). Patterns are written so that
// ECMA-262 and RE2 read them alike (ASCII classes, no lookaround, no \s or \d).
type Schema struct {
	Type        string // object, array, string, integer, boolean
	Nullable    bool   // null is accepted too
	Description string

	Properties []Property // objects, in document order
	Open       bool       // objects: other members allowed, unchecked (free-form documents)
	// Additional validates every member not in Properties (a map); KeyPattern and KeyMaxLength
	// constrain its names and MaxMembers bounds its size (0 = unbounded).
	Additional   *Schema
	KeyPattern   string
	KeyMaxLength int
	MaxMembers   int

	MinLength int     // strings, in code points
	MaxLength int     // strings, in code points; 0 = unbounded
	Pattern   string  // strings
	Format    *Format // strings
	Enum      []string

	Minimum *int64 // integers
	Maximum *int64 // integers

	Items       *Schema // arrays
	MinItems    int
	MaxItems    int // 0 = unbounded
	UniqueItems bool

	re    *regexp.Regexp
	keyRe *regexp.Regexp
}

// Property is one member of an object schema.
type Property struct {
	Name     string
	Schema   *Schema
	Required bool
}

// JSON types.
const (
	TypeObject  = "object"
	TypeArray   = "array"
	TypeString  = "string"
	TypeInteger = "integer"
	TypeBoolean = "boolean"
)

// Format is a string format a schema asserts. Formats are ours (JSON Schema lets a vocabulary
// define formats): the rendering names them and, without a description of its own, describes the
// rule.
type Format struct {
	Name        string
	Description string
	Check       func(string) bool
}

// Prepare compiles the schema's patterns, recursively. It panics on a malformed schema: the
// schemas are static and a test compiles them all.
func (s *Schema) Prepare() {
	if s == nil {
		return
	}
	if s.Pattern != "" && s.re == nil {
		s.re = regexp.MustCompile(s.Pattern)
	}
	if s.Format != nil && (s.Format.Name == "" || s.Format.Check == nil) {
		panic(fmt.Sprintf("schema: incomplete format %q", s.Format.Name))
	}
	if s.KeyPattern != "" && s.keyRe == nil {
		s.keyRe = regexp.MustCompile(s.KeyPattern)
	}
	for _, p := range s.Properties {
		p.Schema.Prepare()
	}
	s.Items.Prepare()
	s.Additional.Prepare()
}

// Validation collects the details of one or more Validate calls, at most problem.MaxDetails.
type Validation struct {
	Details []problem.Detail
}

// Add records one detail, unless v is full.
func (v *Validation) Add(path, code string) { v.AddMessage(path, code, "") }

// AddMessage records one detail with a fixed message, unless v is full.
func (v *Validation) AddMessage(path, code, message string) {
	if len(v.Details) < problem.MaxDetails {
		v.Details = append(v.Details, problem.Detail{Path: path, Code: code, Message: message})
	}
}

// Validate checks value, a document decoded with json.Number for numbers, against s; details go
// to v with paths below path. It returns the value to encode: integers written as 1.0 or 1e2 come
// back as canonical decimal numbers, so that a typed decode that follows sees plain integers.
func (s *Schema) Validate(v *Validation, value any, path string) any {
	if value == nil {
		if !s.Nullable {
			v.Add(path, problem.DetailInvalidType)
		}
		return nil
	}
	switch s.Type {
	case TypeObject:
		obj, ok := value.(map[string]any)
		if !ok {
			v.Add(path, problem.DetailInvalidType)
			return value
		}
		return s.validateObject(v, obj, path)
	case TypeArray:
		arr, ok := value.([]any)
		if !ok {
			v.Add(path, problem.DetailInvalidType)
			return value
		}
		if len(arr) < s.MinItems {
			v.Add(path, problem.DetailInvalidValue)
		}
		if s.MaxItems > 0 && len(arr) > s.MaxItems {
			v.Add(path, problem.DetailTooLong)
			return value
		}
		out := make([]any, len(arr))
		for i, item := range arr {
			out[i] = s.Items.Validate(v, item, path+"/"+strconv.Itoa(i))
		}
		if s.UniqueItems {
			seen := map[string]bool{}
			for i, item := range out {
				key, err := json.Marshal(item)
				if err != nil {
					continue
				}
				if seen[string(key)] {
					v.Add(path+"/"+strconv.Itoa(i), problem.DetailInvalidValue)
				}
				seen[string(key)] = true
			}
		}
		return out
	case TypeString:
		str, ok := value.(string)
		if !ok {
			v.Add(path, problem.DetailInvalidType)
			return value
		}
		n := utf8.RuneCountInString(str)
		switch {
		case s.MaxLength > 0 && n > s.MaxLength:
			v.Add(path, problem.DetailTooLong)
		case n < s.MinLength:
			v.Add(path, problem.DetailInvalidValue)
		case s.Enum != nil && !slices.Contains(s.Enum, str):
			v.AddMessage(path, problem.DetailInvalidValue, EnumMessage(s.Enum))
		case s.re != nil && !s.re.MatchString(str):
			v.Add(path, problem.DetailInvalidFormat)
		case s.Format != nil && !s.Format.Check(str):
			v.Add(path, problem.DetailInvalidFormat)
		}
		return str
	case TypeInteger:
		num, ok := value.(json.Number)
		if !ok {
			v.Add(path, problem.DetailInvalidType)
			return value
		}
		n, class := IntegerLiteral(string(num))
		switch class {
		case NotInteger:
			v.Add(path, problem.DetailInvalidType)
			return value
		case HugeInteger:
			v.Add(path, problem.DetailInvalidValue)
			return value
		}
		if (s.Minimum != nil && n < *s.Minimum) || (s.Maximum != nil && n > *s.Maximum) {
			v.Add(path, problem.DetailInvalidValue)
		}
		return json.Number(strconv.FormatInt(n, 10))
	case TypeBoolean:
		if _, ok := value.(bool); !ok {
			v.Add(path, problem.DetailInvalidType)
		}
		return value
	}
	v.Add(path, problem.DetailInvalidType)
	return value
}

// EnumMessage is the fixed message of a value outside values: it lists them.
func EnumMessage(values []string) string {
	if len(values) == 0 {
		return "No value is accepted."
	}
	return "Must be one of: " + strings.Join(values, ", ") + "."
}

func (s *Schema) validateObject(v *Validation, obj map[string]any, path string) any {
	known := make(map[string]*Schema, len(s.Properties))
	for _, p := range s.Properties {
		known[p.Name] = p.Schema
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(map[string]any, len(obj))
	if s.MaxMembers > 0 && len(obj) > s.MaxMembers {
		v.Add(path, problem.DetailTooLong)
		return obj
	}
	for _, k := range keys {
		if _, ok := known[k]; !ok {
			if s.Additional != nil {
				kp := path + problem.JSONPointer(k)
				switch {
				case s.KeyMaxLength > 0 && utf8.RuneCountInString(k) > s.KeyMaxLength:
					v.Add(kp, problem.DetailTooLong)
				case s.keyRe != nil && !s.keyRe.MatchString(k):
					v.Add(kp, problem.DetailInvalidFormat)
				default:
					out[k] = s.Additional.Validate(v, obj[k], kp)
				}
				continue
			}
			if !s.Open {
				v.Add(path+problem.JSONPointer(k), problem.DetailUnknownField)
			}
			out[k] = obj[k]
		}
	}
	for _, p := range s.Properties {
		value, present := obj[p.Name]
		if !present {
			if p.Required {
				v.Add(path+problem.JSONPointer(p.Name), problem.DetailRequired)
			}
			continue
		}
		out[p.Name] = p.Schema.Validate(v, value, path+problem.JSONPointer(p.Name))
	}
	return out
}

// IntegerClass is what a JSON number literal is to JSON Schema's "integer".
type IntegerClass int

// Integer classes.
const (
	IsInteger IntegerClass = iota
	NotInteger
	HugeInteger // an integer beyond int64: out of every range a schema accepts
)

// IntegerLiteral classifies a JSON number literal mathematically, as JSON Schema does: 1.0 and 1e2
// are integers. It works on the digits, so 1e999999999 costs nothing.
func IntegerLiteral(lit string) (int64, IntegerClass) {
	if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return n, IsInteger
	}
	negative := strings.HasPrefix(lit, "-")
	body := strings.TrimPrefix(lit, "-")
	mantissa, expText := body, ""
	if i := strings.IndexAny(body, "eE"); i >= 0 {
		mantissa, expText = body[:i], body[i+1:]
	}
	intPart, fracPart, _ := strings.Cut(mantissa, ".")
	digits := strings.TrimLeft(intPart+fracPart, "0")
	if digits == "" {
		return 0, IsInteger // zero, however written
	}
	// value = digits × 10^k
	var k int64
	if expText != "" {
		e, err := strconv.ParseInt(strings.TrimPrefix(expText, "+"), 10, 64)
		if err != nil {
			if strings.HasPrefix(expText, "-") {
				return 0, NotInteger
			}
			return 0, HugeInteger
		}
		// Beyond these bounds the answer is known without the arithmetic, which could overflow:
		// a non-zero digit string times 10^k is an integer beyond int64 for k > len+19, and a
		// fraction for k < -len (the literal cannot hold that many trailing zeros).
		bound := int64(len(lit)) + 20
		switch {
		case e > bound:
			return 0, HugeInteger
		case e < -bound:
			return 0, NotInteger
		}
		k = e
	}
	k -= int64(len(fracPart))
	if k < 0 {
		trimmed := strings.TrimRight(digits, "0")
		zeros := int64(len(digits) - len(trimmed))
		if zeros < -k {
			return 0, NotInteger
		}
		digits = digits[:int64(len(digits))+k]
		k = 0
	}
	if int64(len(digits))+k > 19 {
		return 0, HugeInteger
	}
	digits += strings.Repeat("0", int(k))
	if negative {
		digits = "-" + digits
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, HugeInteger
	}
	return n, IsInteger
}

// JSONSchema renders s as a JSON Schema 2020-12 object.
func (s *Schema) JSONSchema() map[string]any {
	out := map[string]any{}
	if s.Nullable {
		out["type"] = []any{s.Type, "null"}
	} else {
		out["type"] = s.Type
	}
	if s.Description != "" {
		out["description"] = s.Description
	}
	switch s.Type {
	case TypeObject:
		props := map[string]any{}
		var required []any
		for _, p := range s.Properties {
			props[p.Name] = p.Schema.JSONSchema()
			if p.Required {
				required = append(required, p.Name)
			}
		}
		if len(props) > 0 {
			out["properties"] = props
		}
		if len(required) > 0 {
			out["required"] = required
		}
		switch {
		case s.Additional != nil:
			out["additionalProperties"] = s.Additional.JSONSchema()
			if s.KeyPattern != "" || s.KeyMaxLength > 0 {
				names := map[string]any{}
				if s.KeyPattern != "" {
					names["pattern"] = s.KeyPattern
				}
				if s.KeyMaxLength > 0 {
					names["maxLength"] = s.KeyMaxLength
				}
				out["propertyNames"] = names
			}
			if s.MaxMembers > 0 {
				out["maxProperties"] = s.MaxMembers
			}
		case !s.Open:
			out["additionalProperties"] = false
		}
	case TypeArray:
		out["items"] = s.Items.JSONSchema()
		if s.MinItems > 0 {
			out["minItems"] = s.MinItems
		}
		if s.MaxItems > 0 {
			out["maxItems"] = s.MaxItems
		}
		if s.UniqueItems {
			out["uniqueItems"] = true
		}
	case TypeString:
		if s.MinLength > 0 {
			out["minLength"] = s.MinLength
		}
		if s.MaxLength > 0 {
			out["maxLength"] = s.MaxLength
		}
		if s.Pattern != "" {
			out["pattern"] = s.Pattern
		}
		if s.Format != nil {
			out["format"] = s.Format.Name
			if s.Description == "" {
				out["description"] = s.Format.Description
			}
		}
		if s.Enum != nil {
			enum := make([]any, len(s.Enum))
			for i, e := range s.Enum {
				enum[i] = e
			}
			if s.Nullable {
				enum = append(enum, nil)
			}
			out["enum"] = enum
		}
	case TypeInteger:
		if s.Minimum != nil {
			out["minimum"] = *s.Minimum
		}
		if s.Maximum != nil {
			out["maximum"] = *s.Maximum
		}
	}
	return out
}

// Constructors, so that a table of schemas reads as a declaration.

// Object is a closed object of props.
func Object(props ...Property) *Schema { return &Schema{Type: TypeObject, Properties: props} }

// OpenObject is a free-form object: any members, unchecked.
func OpenObject(description string) *Schema {
	return &Schema{Type: TypeObject, Open: true, Description: description}
}

// Required is a member that must be present.
func Required(name string, s *Schema) Property {
	return Property{Name: name, Schema: s, Required: true}
}

// Optional is a member that may be absent.
func Optional(name string, s *Schema) Property { return Property{Name: name, Schema: s} }

// String is a string of minLen to maxLen code points (maxLen 0: unbounded).
func String(minLen, maxLen int) *Schema {
	return &Schema{Type: TypeString, MinLength: minLen, MaxLength: maxLen}
}

// Pattern is a string matching p, of at most maxLen code points (0: unbounded).
func Pattern(p string, maxLen int) *Schema {
	return &Schema{Type: TypeString, Pattern: p, MaxLength: maxLen}
}

// Formatted is a string of minLen to maxLen code points in format f.
func Formatted(f *Format, minLen, maxLen int) *Schema {
	return &Schema{Type: TypeString, MinLength: minLen, MaxLength: maxLen, Format: f}
}

// Enum is one of values.
func Enum(values ...string) *Schema { return &Schema{Type: TypeString, Enum: values} }

// Integer is an integer in [lo, hi].
func Integer(lo, hi int64) *Schema { return &Schema{Type: TypeInteger, Minimum: &lo, Maximum: &hi} }

// Boolean is true or false.
func Boolean() *Schema { return &Schema{Type: TypeBoolean} }

// ArrayOf is a list of minItems to maxItems items (maxItems 0: unbounded).
func ArrayOf(items *Schema, minItems, maxItems int) *Schema {
	return &Schema{Type: TypeArray, Items: items, MinItems: minItems, MaxItems: maxItems}
}

// Nullable is s that accepts null too.
func Nullable(s *Schema) *Schema {
	c := *s
	c.Nullable = true
	return &c
}

// Describe is s with a description.
func Describe(s *Schema, description string) *Schema {
	c := *s
	c.Description = description
	return &c
}

// MapOf is an object whose members all satisfy values, with names matching keyPattern of at most
// keyMax code points, and at most maxMembers members (0: unbounded).
func MapOf(values *Schema, keyPattern string, keyMax, maxMembers int) *Schema {
	return &Schema{Type: TypeObject, Additional: values, KeyPattern: keyPattern, KeyMaxLength: keyMax, MaxMembers: maxMembers}
}
