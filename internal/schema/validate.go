package schema

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/openclaw/occ/internal/problem"
)

// Validation collects the details of one or more Validate calls, at most problem.MaxDetails.
type Validation struct {
	Details []problem.Detail
	// Explain gives every detail a fixed sentence (the Driver configurations and the startup YAML
	// carry them; the API's bodies carry paths and codes only). Sentences never hold a value.
	Explain bool

	found int // details found, kept or not: a rule runs only where nothing was found
}

// Add records one detail, unless v is full.
func (v *Validation) Add(path, code string) { v.AddMessage(path, code, "") }

// AddMessage records one detail with a fixed message, unless v is full.
func (v *Validation) AddMessage(path, code, message string) {
	v.found++
	if len(v.Details) < problem.MaxDetails {
		v.Details = append(v.Details, problem.Detail{Path: path, Code: code, Message: message})
	}
}

// explained records one detail whose message, when v explains, is sentence.
func (v *Validation) explained(path, code, sentence string) {
	if !v.Explain {
		sentence = ""
	}
	v.AddMessage(path, code, sentence)
}

// Fixed sentences of the explained details.
const (
	sentenceUnknown  = "This option is not supported."
	sentenceRequired = "This option is required."
	sentenceFormat   = "Has an invalid format."
)

// Validate checks value, a document decoded with json.Number for numbers, against s; details go
// to v with paths below path. It returns the value to encode: integers written as 1.0 or 1e2 come
// back as canonical decimal numbers, so that a typed decode that follows sees plain integers.
func (s *Schema) Validate(v *Validation, value any, path string) any {
	if value == nil {
		if !s.Nullable {
			s.wrongType(v, path)
		}
		return nil
	}
	before := v.found
	out := value
	switch s.Type {
	case TypeObject:
		out = s.validateObject(v, value, path)
	case TypeArray:
		out = s.validateArray(v, value, path)
	case TypeString:
		s.validateString(v, value, path)
	case TypeInteger:
		out = s.validateInteger(v, value, path)
	case TypeBoolean:
		if _, ok := value.(bool); !ok {
			s.wrongType(v, path)
		}
	default:
		s.wrongType(v, path)
	}
	if v.found == before && s.Rule != nil {
		if code, message := s.Rule(value); code != "" {
			v.AddMessage(path, code, message)
		}
	}
	return out
}

// wrongType records INVALID_TYPE with the schema's type sentence.
func (s *Schema) wrongType(v *Validation, path string) {
	if s.TypeMessage != "" {
		v.AddMessage(path, problem.DetailInvalidType, s.TypeMessage)
		return
	}
	v.explained(path, problem.DetailInvalidType, s.typeSentence())
}

func (s *Schema) typeSentence() string {
	switch s.Type {
	case TypeString:
		return "Must be a string."
	case TypeInteger:
		return "Must be an integer."
	case TypeBoolean:
		return "Must be a boolean."
	case TypeArray:
		return "Must be a list."
	case TypeObject:
		if s.Additional != nil && s.Additional.Type == TypeString && len(s.Properties) == 0 {
			return "Must be an object of strings."
		}
		return "Must be an object."
	}
	return "Has the wrong type."
}

func (s *Schema) validateString(v *Validation, value any, path string) {
	str, ok := value.(string)
	if !ok {
		s.wrongType(v, path)
		return
	}
	n := utf8.RuneCountInString(str)
	switch {
	case s.MaxLength > 0 && n > s.MaxLength:
		v.explained(path, problem.DetailTooLong, fmt.Sprintf("Must be at most %d characters long.", s.MaxLength))
	case s.MaxBytes > 0 && len(str) > s.MaxBytes:
		v.explained(path, problem.DetailTooLong, fmt.Sprintf("Must be at most %d bytes long.", s.MaxBytes))
	case n < s.MinLength:
		v.explained(path, problem.DetailInvalidValue, fmt.Sprintf("Must be at least %d characters long.", s.MinLength))
	case s.Enum != nil && !slices.Contains(s.Enum, str):
		v.AddMessage(path, problem.DetailInvalidValue, EnumMessage(s.Enum))
	case s.re != nil && !s.re.MatchString(str):
		v.explained(path, problem.DetailInvalidFormat, sentenceFormat)
	case s.Format != nil && !s.Format.Check(str):
		v.explained(path, problem.DetailInvalidFormat, sentenceFormat)
	}
}

func (s *Schema) validateInteger(v *Validation, value any, path string) any {
	n, class, isNumber := integerOf(value)
	switch {
	case !isNumber, class == NotInteger:
		s.wrongType(v, path)
		return value
	case s.SafeRange && (class == HugeInteger || !safe(n)):
		s.wrongType(v, path)
		return value
	case class == HugeInteger:
		v.explained(path, problem.DetailInvalidValue, s.boundsSentence())
		return value
	}
	if (s.Minimum != nil && n < *s.Minimum) || (s.Maximum != nil && n > *s.Maximum) {
		v.explained(path, problem.DetailInvalidValue, s.boundsSentence())
	}
	return json.Number(strconv.FormatInt(n, 10))
}

func (s *Schema) boundsSentence() string {
	switch {
	case s.Minimum != nil && s.Maximum != nil:
		return fmt.Sprintf("Must be between %d and %d.", *s.Minimum, *s.Maximum)
	case s.Minimum != nil:
		return fmt.Sprintf("Must be at least %d.", *s.Minimum)
	case s.Maximum != nil:
		return fmt.Sprintf("Must be at most %d.", *s.Maximum)
	}
	return "Must be a smaller integer."
}

// EnumMessage is the fixed message of a value outside values: it lists them.
func EnumMessage(values []string) string {
	if len(values) == 0 {
		return "No value is accepted."
	}
	return "Must be one of: " + strings.Join(values, ", ") + "."
}

// countAccepted records the refusal of a count n outside [lo, hi] (hi 0: unbounded) of what
// (items, entries) and reports whether the members are to be checked.
func (s *Schema) countAccepted(v *Validation, path string, n, lo, hi int, what string) bool {
	if s.CountIsValue {
		switch {
		case hi > 0 && lo == hi && n != lo:
			v.explained(path, problem.DetailInvalidValue, fmt.Sprintf("Must have exactly %d %s.", lo, what))
		case n < lo:
			v.explained(path, problem.DetailInvalidValue, fmt.Sprintf("Must have at least %d %s.", lo, what))
		case hi > 0 && n > hi:
			v.explained(path, problem.DetailInvalidValue, fmt.Sprintf("Must have at most %d %s.", hi, what))
		default:
			return true
		}
		return false
	}
	if n < lo {
		v.explained(path, problem.DetailInvalidValue, fmt.Sprintf("Must have at least %d %s.", lo, what))
	}
	if hi > 0 && n > hi {
		v.explained(path, problem.DetailTooLong, fmt.Sprintf("Must have at most %d %s.", hi, what))
		return false
	}
	return true
}

func (s *Schema) validateArray(v *Validation, value any, path string) any {
	arr, ok := value.([]any)
	if !ok {
		s.wrongType(v, path)
		return value
	}
	if !s.countAccepted(v, path, len(arr), s.MinItems, s.MaxItems, "items") {
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
				v.explained(path+"/"+strconv.Itoa(i), problem.DetailInvalidValue, "Repeats an earlier item.")
			}
			seen[string(key)] = true
		}
	}
	return out
}

func (s *Schema) validateObject(v *Validation, value any, path string) any {
	obj, ok := value.(map[string]any)
	if !ok {
		s.wrongType(v, path)
		return value
	}
	before := v.found
	if !s.countAccepted(v, path, len(obj), s.MinMembers, s.MaxMembers, "entries") {
		return obj
	}
	out := make(map[string]any, len(obj))
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if message, refused := s.Refused[k]; refused {
			v.AddMessage(path+problem.JSONPointer(k), problem.DetailUnknownField, message)
			out[k] = obj[k]
		} else if s.property(k) == nil {
			out[k] = s.validateMember(v, k, obj[k], path+problem.JSONPointer(k))
		}
	}
	for _, p := range s.Properties {
		value, present := obj[p.Name]
		if !present {
			if p.Required {
				v.explained(path+problem.JSONPointer(p.Name), problem.DetailRequired, sentenceRequired)
			}
			continue
		}
		out[p.Name] = p.Schema.Validate(v, value, path+problem.JSONPointer(p.Name))
	}
	if v.found == before && s.Discriminator != "" {
		s.validateVariant(v, obj, path)
	}
	if v.found == before && s.ObjectRule != nil {
		for _, d := range s.ObjectRule(obj) {
			v.AddMessage(path+d.Path, d.Code, d.Message)
		}
	}
	return out
}

// validateMember checks a member outside Properties: a map's entry, or an unknown member.
func (s *Schema) validateMember(v *Validation, key string, value any, path string) any {
	if s.Additional == nil {
		switch {
		case s.Open:
		case s.UnknownMessage != "":
			v.AddMessage(path, problem.DetailUnknownField, s.UnknownMessage)
		default:
			v.explained(path, problem.DetailUnknownField, sentenceUnknown)
		}
		return value
	}
	switch {
	case s.KeyMaxLength > 0 && utf8.RuneCountInString(key) > s.KeyMaxLength:
		v.explained(path, problem.DetailTooLong, fmt.Sprintf("Must be a name of at most %d characters.", s.KeyMaxLength))
	case s.keyRe != nil && !s.keyRe.MatchString(key):
		v.explained(path, problem.DetailInvalidFormat, "Has a name of an invalid format.")
	default:
		if s.KeyRule != nil {
			if code, message := s.KeyRule(key); code != "" {
				v.AddMessage(path, code, message)
				return value
			}
		}
		return s.Additional.Validate(v, value, path)
	}
	return value
}

// validateVariant applies the variant the discriminator selects: its required members must be
// present and members outside it are refused. An unknown discriminator value was already reported.
func (s *Schema) validateVariant(v *Validation, obj map[string]any, path string) {
	value, _ := obj[s.Discriminator].(string)
	i := slices.IndexFunc(s.Variants, func(x Variant) bool { return x.Value == value })
	if i < 0 {
		return
	}
	variant := s.Variants[i]
	when := " when " + s.Discriminator + " is " + variant.Value + "."
	for _, p := range s.Properties {
		if p.Name == s.Discriminator {
			continue
		}
		_, present := obj[p.Name]
		required := slices.Contains(variant.Required, p.Name)
		switch {
		case required && !present:
			v.explained(path+problem.JSONPointer(p.Name), problem.DetailRequired, "This option is required"+when)
		case present && !required && !slices.Contains(variant.Optional, p.Name):
			v.explained(path+problem.JSONPointer(p.Name), problem.DetailUnknownField, "This option is not supported"+when)
		}
	}
}
