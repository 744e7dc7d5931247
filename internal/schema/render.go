package schema

import "slices"

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
	if s.Default != nil {
		out["default"] = s.Default
	}
	switch s.Type {
	case TypeObject:
		s.renderObject(out)
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
		s.renderString(out)
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

func (s *Schema) renderObject(out map[string]any) {
	props := map[string]any{}
	var required []string
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
	case !s.Open:
		out["additionalProperties"] = false
	}
	if s.MinMembers > 0 {
		out["minProperties"] = s.MinMembers
	}
	if s.MaxMembers > 0 {
		out["maxProperties"] = s.MaxMembers
	}
	if s.Discriminator != "" && len(s.Variants) > 0 {
		out["oneOf"] = s.renderVariants()
	}
}

// renderVariants renders Variants as oneOf alternatives: each pins the discriminator, requires
// its members and forbids the members it does not allow.
func (s *Schema) renderVariants() []any {
	out := make([]any, 0, len(s.Variants))
	for _, v := range s.Variants {
		props := map[string]any{s.Discriminator: map[string]any{"const": v.Value}}
		for _, p := range s.Properties {
			if p.Name != s.Discriminator && !slices.Contains(v.Required, p.Name) && !slices.Contains(v.Optional, p.Name) {
				props[p.Name] = false
			}
		}
		out = append(out, map[string]any{
			"properties": props,
			"required":   append([]string{s.Discriminator}, v.Required...),
		})
	}
	return out
}

func (s *Schema) renderString(out map[string]any) {
	if s.MinLength > 0 {
		out["minLength"] = s.MinLength
	}
	// A byte bound is rendered as the code-point bound it implies: the rendering accepts at least
	// what the validation does.
	if n := s.MaxLength; n > 0 || s.MaxBytes > 0 {
		if s.MaxBytes > 0 && (n == 0 || s.MaxBytes < n) {
			n = s.MaxBytes
		}
		out["maxLength"] = n
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
}
