// Package schema is OCC's JSON Schema engine: the subset of JSON Schema 2020-12 that OCC's closed
// documents use, declared in Go. One value serves three purposes: it validates a decoded document
// into JSON-Pointer details (problem.Detail), it renders itself into a JSON Schema document (the
// OpenAPI document's schemas, the Driver configuration schemas), and tests compile that rendering
// with an independent validator to check that both agree.
//
// The request bodies, the Driver configuration schemas and the startup YAML are declared with it.
// Rules the rendering cannot express (Rule, ObjectRule, KeyRule, byte lengths) only ever refuse
// more than the rendered document does.
//
// It imports nothing of ours but problem.
package schema

import (
	"fmt"
	"regexp"

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
	// Default documents the value used when the member is absent (rendered as "default" only).
	Default any
	// TypeMessage replaces the sentence of a value of the wrong type (for example to tell the
	// operator to quote a quantity); fixed text, never the submitted value.
	TypeMessage string

	Properties []Property // objects, in document order
	Open       bool       // objects: other members allowed, unchecked (free-form documents)
	// UnknownMessage replaces the sentence of an unknown member of a closed object; Refused
	// gives some unknown members a sentence of their own (upstream options not supported here).
	UnknownMessage string
	Refused        map[string]string
	// Additional validates every member not in Properties (a map); KeyPattern and KeyMaxLength
	// constrain its names, KeyRule checks each name further (not rendered), and MinMembers and
	// MaxMembers bound its size (0 = unbounded).
	Additional   *Schema
	KeyPattern   string
	KeyMaxLength int
	KeyRule      func(key string) (code, message string)
	MinMembers   int
	MaxMembers   int
	// Discriminator names the string Enum property whose value selects one of Variants (rendered
	// as oneOf): the variant's Required members must be present and every other member of
	// Properties outside it is refused. Properties lists the union of all variants' members;
	// only the discriminator itself should be Required there.
	Discriminator string
	Variants      []Variant

	MinLength int     // strings, in code points
	MaxLength int     // strings, in code points; 0 = unbounded
	MaxBytes  int     // strings, in UTF-8 bytes (rendered as maxLength); 0 = unbounded
	Pattern   string  // strings
	Format    *Format // strings
	Enum      []string

	Minimum *int64 // integers
	Maximum *int64 // integers
	// SafeRange: an integer beyond ±(2^53-1), which not every JSON consumer holds exactly, is
	// of the wrong type (INVALID_TYPE) rather than out of range.
	SafeRange bool

	Items       *Schema // arrays
	MinItems    int
	MaxItems    int // 0 = unbounded
	UniqueItems bool
	// CountIsValue: an array or map whose count lies outside its bounds is one INVALID_VALUE
	// detail and its members are not checked (the Driver configurations). Otherwise too few is
	// INVALID_VALUE and too many TOO_LONG (the API's).
	CountIsValue bool

	// Rule checks a value the schema accepted, once nothing was found inside it; it returns a
	// detail code and a fixed message, or "" when the value is acceptable. Not rendered.
	Rule func(value any) (code, message string)
	// ObjectRule checks an object the schema accepted across its members, once nothing was found
	// inside it; the details' paths are relative to the object. Not rendered.
	ObjectRule func(object map[string]any) []problem.Detail

	re    *regexp.Regexp
	keyRe *regexp.Regexp
}

// Property is one member of an object schema.
type Property struct {
	Name     string
	Schema   *Schema
	Required bool
}

// Variant is one alternative of a discriminated object (Schema.Discriminator).
type Variant struct {
	// Value is the discriminator value that selects this variant.
	Value string
	// Required members must be present with this value; Optional members may be.
	Required, Optional []string
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
	if s.Discriminator != "" && s.property(s.Discriminator) == nil {
		panic(fmt.Sprintf("schema: discriminator %q is not a property", s.Discriminator))
	}
	for _, p := range s.Properties {
		p.Schema.Prepare()
	}
	s.Items.Prepare()
	s.Additional.Prepare()
}

func (s *Schema) property(name string) *Property {
	for i := range s.Properties {
		if s.Properties[i].Name == name {
			return &s.Properties[i]
		}
	}
	return nil
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

// SafeInteger is an integer in [lo, hi] whose JSON consumers all hold it exactly: beyond
// ±(2^53-1) it is of the wrong type (the Driver configurations, read by YAML and JSON decoders).
func SafeInteger(lo, hi int64) *Schema {
	s := Integer(lo, hi)
	s.SafeRange = true
	return s
}

// Defaulted is s described, with the value used when the member is absent.
func Defaulted(s *Schema, value any, description string) *Schema {
	c := *s
	c.Default, c.Description = value, description
	return &c
}
