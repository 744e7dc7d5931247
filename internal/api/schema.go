package api

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
)

// Schema is the subset of JSON Schema 2020-12 the API's request and response bodies use. One value
// serves three purposes: it validates requests (with JSON-Pointer details), it is rendered into
// the OpenAPI document, and tests compile that rendering with a reference validator to check that
// both agree.
//
// Request objects are always closed (additionalProperties: false). Patterns are written so that
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

	MinLength int    // strings, in code points
	MaxLength int    // strings, in code points; 0 = unbounded
	Pattern   string // strings
	Format    string // strings: a key of formats
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
	typeObject  = "object"
	typeArray   = "array"
	typeString  = "string"
	typeInteger = "integer"
	typeBoolean = "boolean"
)

// formats are the string formats the API asserts. They are ours (JSON Schema lets a vocabulary
// define formats); the OpenAPI document names them and describes the rule.
var formats = map[string]struct {
	check       func(string) bool
	description string
}{
	"occ-name": {platform.ValidName, "Name rule: 1 to 200 characters, no leading or trailing whitespace, " +
		"no control characters, U+2028 or U+2029."},
}

// prepare compiles the schema's patterns, recursively. It panics on a malformed schema: the
// schemas are static and a test compiles them all.
func (s *Schema) prepare() {
	if s == nil {
		return
	}
	if s.Pattern != "" && s.re == nil {
		s.re = regexp.MustCompile(s.Pattern)
	}
	if s.Format != "" {
		if _, ok := formats[s.Format]; !ok {
			panic(fmt.Sprintf("api: unknown format %q", s.Format))
		}
	}
	if s.KeyPattern != "" && s.keyRe == nil {
		s.keyRe = regexp.MustCompile(s.KeyPattern)
	}
	for _, p := range s.Properties {
		p.Schema.prepare()
	}
	s.Items.prepare()
	s.Additional.prepare()
}

// validation collects details, at most problem.MaxDetails.
type validation struct {
	details []problem.Detail
}

func (v *validation) add(path, code string) {
	if len(v.details) < problem.MaxDetails {
		v.details = append(v.details, problem.Detail{Path: path, Code: code})
	}
}

// validate checks value (as produced by decodeJSON) against s and returns the value to encode:
// integers written as 1.0 or 1e2 come back as canonical decimal numbers, so that the typed decode
// that follows sees plain integers.
func (s *Schema) validate(v *validation, value any, path string) any {
	if value == nil {
		if !s.Nullable {
			v.add(path, problem.DetailInvalidType)
		}
		return nil
	}
	switch s.Type {
	case typeObject:
		obj, ok := value.(map[string]any)
		if !ok {
			v.add(path, problem.DetailInvalidType)
			return value
		}
		return s.validateObject(v, obj, path)
	case typeArray:
		arr, ok := value.([]any)
		if !ok {
			v.add(path, problem.DetailInvalidType)
			return value
		}
		if len(arr) < s.MinItems {
			v.add(path, problem.DetailInvalidValue)
		}
		if s.MaxItems > 0 && len(arr) > s.MaxItems {
			v.add(path, problem.DetailTooLong)
			return value
		}
		out := make([]any, len(arr))
		for i, item := range arr {
			out[i] = s.Items.validate(v, item, path+"/"+strconv.Itoa(i))
		}
		if s.UniqueItems {
			seen := map[string]bool{}
			for i, item := range out {
				key, err := json.Marshal(item)
				if err != nil {
					continue
				}
				if seen[string(key)] {
					v.add(path+"/"+strconv.Itoa(i), problem.DetailInvalidValue)
				}
				seen[string(key)] = true
			}
		}
		return out
	case typeString:
		str, ok := value.(string)
		if !ok {
			v.add(path, problem.DetailInvalidType)
			return value
		}
		n := utf8.RuneCountInString(str)
		switch {
		case s.MaxLength > 0 && n > s.MaxLength:
			v.add(path, problem.DetailTooLong)
		case n < s.MinLength:
			v.add(path, problem.DetailInvalidValue)
		case s.Enum != nil && !slices.Contains(s.Enum, str):
			v.add(path, problem.DetailInvalidValue)
		case s.re != nil && !s.re.MatchString(str):
			v.add(path, problem.DetailInvalidFormat)
		case s.Format != "" && !formats[s.Format].check(str):
			v.add(path, problem.DetailInvalidFormat)
		}
		return str
	case typeInteger:
		num, ok := value.(json.Number)
		if !ok {
			v.add(path, problem.DetailInvalidType)
			return value
		}
		n, class := integerValue(string(num))
		switch class {
		case notInteger:
			v.add(path, problem.DetailInvalidType)
			return value
		case hugeInteger:
			v.add(path, problem.DetailInvalidValue)
			return value
		}
		if (s.Minimum != nil && n < *s.Minimum) || (s.Maximum != nil && n > *s.Maximum) {
			v.add(path, problem.DetailInvalidValue)
		}
		return json.Number(strconv.FormatInt(n, 10))
	case typeBoolean:
		if _, ok := value.(bool); !ok {
			v.add(path, problem.DetailInvalidType)
		}
		return value
	}
	v.add(path, problem.DetailInvalidType)
	return value
}

func (s *Schema) validateObject(v *validation, obj map[string]any, path string) any {
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
		v.add(path, problem.DetailTooLong)
		return obj
	}
	for _, k := range keys {
		if _, ok := known[k]; !ok {
			if s.Additional != nil {
				kp := path + problem.JSONPointer(k)
				switch {
				case s.KeyMaxLength > 0 && utf8.RuneCountInString(k) > s.KeyMaxLength:
					v.add(kp, problem.DetailTooLong)
				case s.keyRe != nil && !s.keyRe.MatchString(k):
					v.add(kp, problem.DetailInvalidFormat)
				default:
					out[k] = s.Additional.validate(v, obj[k], kp)
				}
				continue
			}
			if !s.Open {
				v.add(path+problem.JSONPointer(k), problem.DetailUnknownField)
			}
			out[k] = obj[k]
		}
	}
	for _, p := range s.Properties {
		value, present := obj[p.Name]
		if !present {
			if p.Required {
				v.add(path+problem.JSONPointer(p.Name), problem.DetailRequired)
			}
			continue
		}
		out[p.Name] = p.Schema.validate(v, value, path+problem.JSONPointer(p.Name))
	}
	return out
}

type integerClass int

const (
	isInteger integerClass = iota
	notInteger
	hugeInteger // an integer beyond int64: out of every range the API accepts
)

// integerValue classifies a JSON number literal mathematically, as JSON Schema does: 1.0 and 1e2
// are integers. It works on the digits, so 1e999999999 costs nothing.
func integerValue(lit string) (int64, integerClass) {
	if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return n, isInteger
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
		return 0, isInteger // zero, however written
	}
	// value = digits × 10^k
	var k int64
	if expText != "" {
		e, err := strconv.ParseInt(strings.TrimPrefix(expText, "+"), 10, 64)
		if err != nil {
			if strings.HasPrefix(expText, "-") {
				return 0, notInteger
			}
			return 0, hugeInteger
		}
		k = e
	}
	k -= int64(len(fracPart))
	if k < 0 {
		trimmed := strings.TrimRight(digits, "0")
		zeros := int64(len(digits) - len(trimmed))
		if zeros < -k {
			return 0, notInteger
		}
		digits = digits[:int64(len(digits))+k]
		k = 0
	}
	if int64(len(digits))+k > 19 {
		return 0, hugeInteger
	}
	digits += strings.Repeat("0", int(k))
	if negative {
		digits = "-" + digits
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, hugeInteger
	}
	return n, isInteger
}

// jsonSchema renders s as a JSON Schema 2020-12 object for the OpenAPI document.
func (s *Schema) jsonSchema() map[string]any {
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
	case typeObject:
		props := map[string]any{}
		var required []any
		for _, p := range s.Properties {
			props[p.Name] = p.Schema.jsonSchema()
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
			out["additionalProperties"] = s.Additional.jsonSchema()
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
	case typeArray:
		out["items"] = s.Items.jsonSchema()
		if s.MinItems > 0 {
			out["minItems"] = s.MinItems
		}
		if s.MaxItems > 0 {
			out["maxItems"] = s.MaxItems
		}
		if s.UniqueItems {
			out["uniqueItems"] = true
		}
	case typeString:
		if s.MinLength > 0 {
			out["minLength"] = s.MinLength
		}
		if s.MaxLength > 0 {
			out["maxLength"] = s.MaxLength
		}
		if s.Pattern != "" {
			out["pattern"] = s.Pattern
		}
		if s.Format != "" {
			out["format"] = s.Format
			if s.Description == "" {
				out["description"] = formats[s.Format].description
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
	case typeInteger:
		if s.Minimum != nil {
			out["minimum"] = *s.Minimum
		}
		if s.Maximum != nil {
			out["maximum"] = *s.Maximum
		}
	}
	return out
}

// Schema constructors for the route table.

func object(props ...Property) *Schema { return &Schema{Type: typeObject, Properties: props} }

func openObject(description string) *Schema {
	return &Schema{Type: typeObject, Open: true, Description: description}
}

func required(name string, s *Schema) Property {
	return Property{Name: name, Schema: s, Required: true}
}

func optional(name string, s *Schema) Property { return Property{Name: name, Schema: s} }

func str(minLen, maxLen int) *Schema {
	return &Schema{Type: typeString, MinLength: minLen, MaxLength: maxLen}
}

func pattern(p string, maxLen int) *Schema {
	return &Schema{Type: typeString, Pattern: p, MaxLength: maxLen}
}

func idOf(prefix string) *Schema { return pattern(platform.IDPattern(prefix), 0) }

func opaqueID() *Schema { return pattern(platform.OpaqueIDPattern, 200) }

func name() *Schema {
	return &Schema{Type: typeString, MinLength: 1, MaxLength: 200, Format: "occ-name"}
}

func enum(values ...string) *Schema { return &Schema{Type: typeString, Enum: values} }

func integer(lo, hi int64) *Schema { return &Schema{Type: typeInteger, Minimum: &lo, Maximum: &hi} }

func boolean() *Schema { return &Schema{Type: typeBoolean} }

func timestamp() *Schema { return pattern(platform.TimestampPattern, 0) }

func arrayOf(items *Schema, minItems, maxItems int) *Schema {
	return &Schema{Type: typeArray, Items: items, MinItems: minItems, MaxItems: maxItems}
}

func nullable(s *Schema) *Schema {
	c := *s
	c.Nullable = true
	return &c
}

func describe(s *Schema, description string) *Schema {
	c := *s
	c.Description = description
	return &c
}

// mapOf is an object whose members all satisfy values, with names matching keyPattern.
func mapOf(values *Schema, keyPattern string, keyMax, maxMembers int) *Schema {
	return &Schema{Type: typeObject, Additional: values, KeyPattern: keyPattern, KeyMaxLength: keyMax, MaxMembers: maxMembers}
}
