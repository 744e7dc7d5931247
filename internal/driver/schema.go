package driver

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Detail codes of ConfigurationError (the API's detail vocabulary, SPEC §5).
const (
	DetailRequired      = "REQUIRED"
	DetailUnknownField  = "UNKNOWN_FIELD"
	DetailInvalidType   = "INVALID_TYPE"
	DetailInvalidFormat = "INVALID_FORMAT"
	DetailInvalidValue  = "INVALID_VALUE"
	DetailTooLong       = "TOO_LONG"
)

// MaxDetails bounds ConfigurationError.Details, as the startup error contract does.
const MaxDetails = 32

// Detail locates one configuration problem.
type Detail struct {
	// Path is an RFC 6901 JSON Pointer relative to the driver's configuration object ("" is the
	// object itself); the startup loader prefixes it with the selection's path.
	Path string
	// Code is one of the Detail* constants.
	Code string
	// Message is a fixed sentence that never contains the submitted value.
	Message string
}

// ConfigurationError is a driver configuration that fails its schema or semantic validation.
// Startup reports it as DRIVER_CONFIGURATION_INVALID with the details.
type ConfigurationError struct {
	Details []Detail
}

func (e *ConfigurationError) Error() string {
	if len(e.Details) == 0 {
		return CodeDriverConfigurationInvalid
	}
	d := e.Details[0]
	s := CodeDriverConfigurationInvalid + ": " + d.Code + " at " + pointerOrRoot(d.Path) + ": " + d.Message
	if n := len(e.Details) - 1; n > 0 {
		s += fmt.Sprintf(" (and %d more)", n)
	}
	return s
}

// ErrorCode returns DRIVER_CONFIGURATION_INVALID.
func (e *ConfigurationError) ErrorCode() string { return CodeDriverConfigurationInvalid }

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
	// Check runs after the type and bound checks; it returns a Detail code and a fixed message,
	// or "" when the value is acceptable. It is not part of the JSON Schema document.
	Check func(value any) (code, message string)
}

// ObjectSchema is a closed object schema described in Go: keys not in Properties are refused.
type ObjectSchema struct {
	Description string
	Properties  []Property
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
	if p.Type == TypeObject {
		doc = objectDocument(p.Properties)
	} else {
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

// Validate implements ConfigurationSchema.
func (s ObjectSchema) Validate(configuration map[string]any) error {
	var details []Detail
	validateObject("", s.Properties, configuration, &details)
	if len(details) == 0 {
		return nil
	}
	if len(details) > MaxDetails {
		details = details[:MaxDetails]
	}
	return &ConfigurationError{Details: details}
}

func validateObject(path string, props []Property, obj map[string]any, out *[]Detail) {
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
			*out = append(*out, Detail{Path: path + "/" + EscapePointer(k), Code: DetailUnknownField, Message: "This option is not supported."})
		}
	}
	for _, p := range props {
		v, ok := obj[p.Name]
		at := path + "/" + EscapePointer(p.Name)
		if !ok {
			if p.Required {
				*out = append(*out, Detail{Path: at, Code: DetailRequired, Message: "This option is required."})
			}
			continue
		}
		validateValue(at, p, v, out)
	}
}

func validateValue(at string, p Property, v any, out *[]Detail) {
	add := func(code, msg string) { *out = append(*out, Detail{Path: at, Code: code, Message: msg}) }
	switch p.Type {
	case TypeString:
		s, ok := v.(string)
		if !ok {
			add(DetailInvalidType, "Must be a string.")
			return
		}
		if p.MaxLength > 0 && len(s) > p.MaxLength {
			add(DetailTooLong, "Must be at most "+strconv.Itoa(p.MaxLength)+" bytes long.")
			return
		}
		if p.Pattern != "" && !regexp.MustCompile(p.Pattern).MatchString(s) {
			add(DetailInvalidFormat, "Has an invalid format.")
			return
		}
		if len(p.Enum) > 0 && !contains(p.Enum, s) {
			add(DetailInvalidValue, "Must be one of: "+strings.Join(p.Enum, ", ")+".")
			return
		}
	case TypeInteger:
		n, ok := IntegerValue(v)
		if !ok {
			add(DetailInvalidType, "Must be an integer.")
			return
		}
		if n < p.Minimum || n > p.Maximum {
			add(DetailInvalidValue, fmt.Sprintf("Must be between %d and %d.", p.Minimum, p.Maximum))
			return
		}
	case TypeBoolean:
		if _, ok := v.(bool); !ok {
			add(DetailInvalidType, "Must be a boolean.")
			return
		}
	case TypeObject:
		m, ok := v.(map[string]any)
		if !ok {
			add(DetailInvalidType, "Must be an object.")
			return
		}
		validateObject(at, p.Properties, m, out)
		return
	}
	if p.Check != nil {
		if code, msg := p.Check(v); code != "" {
			add(code, msg)
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
// range.
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
		i, err := x.Int64()
		if err != nil {
			f, ferr := x.Float64()
			if ferr != nil {
				return 0, false
			}
			return IntegerValue(f)
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
