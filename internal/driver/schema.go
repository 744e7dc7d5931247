package driver

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/schema"
)

// ConfigurationError is a driver configuration that fails its schema or semantic validation.
// Startup reports it as DRIVER_CONFIGURATION_INVALID with the details, whose paths are JSON
// Pointers relative to the driver's configuration object ("" is the object itself); the startup
// loader prefixes them with the selection's path.
type ConfigurationError struct {
	problem.Problem
}

// NewConfigurationError returns the refusal of details (at most problem.MaxDetails are kept).
// Its message names the first detail and how many follow; it holds paths and fixed sentences,
// never a submitted value.
func NewConfigurationError(details ...problem.Detail) *ConfigurationError {
	details = problem.Limit(details)
	message := ""
	if len(details) > 0 {
		d := details[0]
		message = d.Code + " at " + pointerOrRoot(d.Path) + ": " + d.Message
		if n := len(details) - 1; n > 0 {
			message += fmt.Sprintf(" (and %d more)", n)
		}
	}
	return &ConfigurationError{Problem: problem.Problem{Code: CodeDriverConfigurationInvalid, Message: message, Details: details}}
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// ConfigurationSchema is the closed schema of one implementation's configuration object.
type ConfigurationSchema interface {
	// JSONSchema returns the schema as a JSON Schema document whose root (and every nested
	// object) has "additionalProperties": false.
	JSONSchema() map[string]any
	// Validate checks configuration (nil means {}) and returns nil or a *ConfigurationError.
	Validate(configuration map[string]any) error
}

// PropertyType is the JSON type of a Property.
type PropertyType string

// Property types.
const (
	TypeString  PropertyType = "string"
	TypeInteger PropertyType = "integer"
	TypeBoolean PropertyType = "boolean"
	TypeObject  PropertyType = "object"
	// TypeArray is a JSON array whose elements all match Items.
	TypeArray PropertyType = "array"
	// TypeStringMap is a JSON object of operator-chosen keys with string values (label selectors,
	// quotas): JSON Schema "additionalProperties" is the Items document instead of false. Keys
	// are checked by KeyCheck, values by Items (which must be a TypeString property).
	TypeStringMap PropertyType = "stringMap"
)

// Property describes one key of an ObjectSchema.
type Property struct {
	Name        string
	Type        PropertyType
	Required    bool
	Description string
	// Default documents the value used when the key is absent (JSON Schema "default" only).
	Default any

	// Integer bounds, both inclusive, applied when Type is TypeInteger.
	Minimum, Maximum int64
	// MaxLength bounds a string in bytes (TOO_LONG); 0 means no bound.
	MaxLength int
	// Pattern is a regular expression a string must match (INVALID_FORMAT).
	Pattern string
	// Enum lists the allowed strings (INVALID_VALUE).
	Enum []string
	// Properties are the keys of a closed nested object (TypeObject).
	Properties []Property
	// Discriminator names the string Enum property of a TypeObject whose value selects one of
	// Variants (a JSON Schema oneOf): the keys the variant requires, the keys it allows, and
	// every other key of Properties refused (UNKNOWN_FIELD). Properties lists the union of all
	// variants' keys; only the discriminator itself should be Required there.
	Discriminator string
	Variants      []Variant
	// Items describes the elements of a TypeArray or the values of a TypeStringMap.
	Items *Property
	// MinItems and MaxItems bound the elements of a TypeArray or the entries of a TypeStringMap
	// (INVALID_VALUE); MaxItems 0 means no bound.
	MinItems, MaxItems int
	// KeyCheck validates each key of a TypeStringMap like Check (not part of the JSON Schema).
	KeyCheck func(key string) (code, message string)
	// TypeMessage replaces the INVALID_TYPE sentence (for example to tell the operator to quote a
	// quantity); it must be fixed text, never the submitted value.
	TypeMessage string
	// Check runs after the type and bound checks (for objects, arrays and maps: only when their
	// members raised nothing); it returns a Detail code and a fixed message, or "" when the
	// value is acceptable. It is not part of the JSON Schema document.
	Check func(value any) (code, message string)
}

// Variant is one alternative of a discriminated object (Property.Discriminator).
type Variant struct {
	// Value is the discriminator value that selects this variant.
	Value string
	// Required keys must be present with this value; Optional keys may be.
	Required, Optional []string
}

// ObjectSchema is a closed object schema described in Go: keys not in Properties are refused.
type ObjectSchema struct {
	Description string
	Properties  []Property
	// Check is the implementation's semantic validation (rules across several keys). It runs only
	// when the properties raised nothing and returns details with paths relative to the root. It
	// is not part of the JSON Schema document.
	Check func(configuration map[string]any) []problem.Detail
}

// JSONSchema implements ConfigurationSchema.
func (s ObjectSchema) JSONSchema() map[string]any {
	doc := objectDocument(s.Properties)
	doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	if s.Description != "" {
		doc["description"] = s.Description
	}
	return doc
}

func objectDocument(props []Property) map[string]any {
	properties := make(map[string]any, len(props))
	var required []string
	for _, p := range props {
		properties[p.Name] = propertyDocument(p)
		if p.Required {
			required = append(required, p.Name)
		}
	}
	doc := map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"properties":           properties,
	}
	if len(required) > 0 {
		doc["required"] = required
	}
	return doc
}

func propertyDocument(p Property) map[string]any {
	var doc map[string]any
	switch p.Type {
	case TypeObject:
		doc = objectDocument(p.Properties)
		if p.Discriminator != "" && len(p.Variants) > 0 {
			doc["oneOf"] = variantDocuments(p)
		}
	case TypeArray:
		doc = map[string]any{"type": "array"}
		if p.Items != nil {
			doc["items"] = propertyDocument(*p.Items)
		}
		if p.MinItems > 0 {
			doc["minItems"] = p.MinItems
		}
		if p.MaxItems > 0 {
			doc["maxItems"] = p.MaxItems
		}
	case TypeStringMap:
		values := map[string]any{"type": "string"}
		if p.Items != nil {
			values = propertyDocument(*p.Items)
		}
		doc = map[string]any{"type": "object", "additionalProperties": values}
		if p.MinItems > 0 {
			doc["minProperties"] = p.MinItems
		}
		if p.MaxItems > 0 {
			doc["maxProperties"] = p.MaxItems
		}
	default:
		doc = map[string]any{"type": string(p.Type)}
	}
	if p.Description != "" {
		doc["description"] = p.Description
	}
	if p.Default != nil {
		doc["default"] = p.Default
	}
	switch p.Type {
	case TypeInteger:
		doc["minimum"] = p.Minimum
		doc["maximum"] = p.Maximum
	case TypeString:
		if p.MaxLength > 0 {
			doc["maxLength"] = p.MaxLength
		}
		if p.Pattern != "" {
			doc["pattern"] = p.Pattern
		}
		if len(p.Enum) > 0 {
			doc["enum"] = append([]string(nil), p.Enum...)
		}
	}
	return doc
}

// variantDocuments renders Variants as JSON Schema oneOf alternatives: each pins the
// discriminator, requires its keys and forbids the keys it does not allow.
func variantDocuments(p Property) []any {
	out := make([]any, 0, len(p.Variants))
	for _, v := range p.Variants {
		props := map[string]any{p.Discriminator: map[string]any{"const": v.Value}}
		for _, q := range p.Properties {
			if q.Name != p.Discriminator && !contains(v.Required, q.Name) && !contains(v.Optional, q.Name) {
				props[q.Name] = false
			}
		}
		out = append(out, map[string]any{
			"properties": props,
			"required":   append([]string{p.Discriminator}, v.Required...),
		})
	}
	return out
}

// Validate implements ConfigurationSchema.
func (s ObjectSchema) Validate(configuration map[string]any) error {
	var details []problem.Detail
	validateObject("", s.Properties, configuration, &details)
	if len(details) == 0 && s.Check != nil {
		details = append(details, s.Check(configuration)...)
	}
	if len(details) == 0 {
		return nil
	}
	return NewConfigurationError(details...)
}

func validateObject(path string, props []Property, obj map[string]any, out *[]problem.Detail) {
	known := make(map[string]bool, len(props))
	for _, p := range props {
		known[p.Name] = true
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !known[k] {
			*out = append(*out, problem.Detail{Path: path + "/" + EscapePointer(k), Code: problem.DetailUnknownField, Message: "This option is not supported."})
		}
	}
	for _, p := range props {
		v, ok := obj[p.Name]
		at := path + "/" + EscapePointer(p.Name)
		if !ok {
			if p.Required {
				*out = append(*out, problem.Detail{Path: at, Code: problem.DetailRequired, Message: "This option is required."})
			}
			continue
		}
		validateValue(at, p, v, out)
	}
}

func validateValue(at string, p Property, v any, out *[]problem.Detail) {
	add := func(code, msg string) { *out = append(*out, problem.Detail{Path: at, Code: code, Message: msg}) }
	wrongType := func(msg string) {
		if p.TypeMessage != "" {
			msg = p.TypeMessage
		}
		add(problem.DetailInvalidType, msg)
	}
	before := len(*out)
	switch p.Type {
	case TypeString:
		s, ok := v.(string)
		if !ok {
			wrongType("Must be a string.")
			return
		}
		if p.MaxLength > 0 && len(s) > p.MaxLength {
			add(problem.DetailTooLong, "Must be at most "+strconv.Itoa(p.MaxLength)+" bytes long.")
			return
		}
		if p.Pattern != "" && !regexp.MustCompile(p.Pattern).MatchString(s) {
			add(problem.DetailInvalidFormat, "Has an invalid format.")
			return
		}
		if len(p.Enum) > 0 && !contains(p.Enum, s) {
			add(problem.DetailInvalidValue, schema.EnumMessage(p.Enum))
			return
		}
	case TypeInteger:
		n, ok := IntegerValue(v)
		if !ok {
			wrongType("Must be an integer.")
			return
		}
		if n < p.Minimum || n > p.Maximum {
			add(problem.DetailInvalidValue, fmt.Sprintf("Must be between %d and %d.", p.Minimum, p.Maximum))
			return
		}
	case TypeBoolean:
		if _, ok := v.(bool); !ok {
			wrongType("Must be a boolean.")
			return
		}
	case TypeObject:
		m, ok := v.(map[string]any)
		if !ok {
			wrongType("Must be an object.")
			return
		}
		validateObject(at, p.Properties, m, out)
		if p.Discriminator != "" && len(*out) == before {
			validateVariant(at, p, m, out)
		}
	case TypeArray:
		list, ok := v.([]any)
		if !ok {
			wrongType("Must be a list.")
			return
		}
		if !countInBounds(len(list), p.MinItems, p.MaxItems, "items", add) {
			return
		}
		if p.Items != nil {
			for i, item := range list {
				validateValue(at+"/"+strconv.Itoa(i), *p.Items, item, out)
			}
		}
	case TypeStringMap:
		m, ok := v.(map[string]any)
		if !ok {
			wrongType("Must be an object of strings.")
			return
		}
		if !countInBounds(len(m), p.MinItems, p.MaxItems, "entries", add) {
			return
		}
		item := Property{Type: TypeString}
		if p.Items != nil {
			item = *p.Items
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			kp := at + "/" + EscapePointer(k)
			if p.KeyCheck != nil {
				if code, msg := p.KeyCheck(k); code != "" {
					*out = append(*out, problem.Detail{Path: kp, Code: code, Message: msg})
					continue
				}
			}
			validateValue(kp, item, m[k], out)
		}
	}
	if len(*out) > before {
		return
	}
	if p.Check != nil {
		if code, msg := p.Check(v); code != "" {
			add(code, msg)
		}
	}
}

// countInBounds records INVALID_VALUE when n lies outside [min, max] (max 0: unbounded).
func countInBounds(n, min, max int, what string, add func(code, msg string)) bool {
	switch {
	case max > 0 && min == max && n != min:
		add(problem.DetailInvalidValue, fmt.Sprintf("Must have exactly %d %s.", min, what))
	case n < min:
		add(problem.DetailInvalidValue, fmt.Sprintf("Must have at least %d %s.", min, what))
	case max > 0 && n > max:
		add(problem.DetailInvalidValue, fmt.Sprintf("Must have at most %d %s.", max, what))
	default:
		return true
	}
	return false
}

// validateVariant applies the variant the discriminator selects: its required keys must be
// present and keys outside it are refused. An unknown discriminator value was already reported.
func validateVariant(at string, p Property, m map[string]any, out *[]problem.Detail) {
	value, _ := m[p.Discriminator].(string)
	var variant *Variant
	for i := range p.Variants {
		if p.Variants[i].Value == value {
			variant = &p.Variants[i]
		}
	}
	if variant == nil {
		return
	}
	for _, q := range p.Properties {
		if q.Name == p.Discriminator {
			continue
		}
		_, present := m[q.Name]
		switch {
		case contains(variant.Required, q.Name) && !present:
			*out = append(*out, problem.Detail{Path: at + "/" + EscapePointer(q.Name), Code: problem.DetailRequired,
				Message: "This option is required when " + p.Discriminator + " is " + variant.Value + "."})
		case present && !contains(variant.Required, q.Name) && !contains(variant.Optional, q.Name):
			*out = append(*out, problem.Detail{Path: at + "/" + EscapePointer(q.Name), Code: problem.DetailUnknownField,
				Message: "This option is not supported when " + p.Discriminator + " is " + variant.Value + "."})
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// maxSafeInteger is the largest integer every JSON consumer represents exactly (2^53-1).
const maxSafeInteger = 1<<53 - 1

// IntegerValue returns v as an int64 when it is an integer value of any Go numeric type that a
// YAML or JSON decoder produces (including whole float64 and json.Number) within the safe-integer
// range. A json.Number is judged on its digits, as the request schemas judge it (1.0 and 1e2 are
// integers, 4.0000000000000000001 is not).
func IntegerValue(v any) (int64, bool) {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int8:
		n = int64(x)
	case int16:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	case uint:
		if uint64(x) > maxSafeInteger {
			return 0, false
		}
		n = int64(x)
	case uint8:
		n = int64(x)
	case uint16:
		n = int64(x)
	case uint32:
		n = int64(x)
	case uint64:
		if x > maxSafeInteger {
			return 0, false
		}
		n = int64(x)
	case float32:
		return IntegerValue(float64(x))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || x != math.Trunc(x) || math.Abs(x) > maxSafeInteger {
			return 0, false
		}
		n = int64(x)
	case json.Number:
		i, class := schema.IntegerLiteral(string(x))
		if class != schema.IsInteger {
			return 0, false
		}
		n = i
	default:
		return 0, false
	}
	if n > maxSafeInteger || n < -maxSafeInteger {
		return 0, false
	}
	return n, true
}

// EscapePointer escapes one JSON Pointer reference token (RFC 6901: "~" → "~0", "/" → "~1").
func EscapePointer(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}
