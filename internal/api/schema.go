package api

import (
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/schema"
)

// The request and response bodies are declared with internal/schema. Request objects are always
// closed (additionalProperties: false). Patterns are written so that ECMA-262 and RE2 read them
// alike (ASCII classes, no lookaround, no \s or \d).

// occName is the one string format the API asserts.
var occName = &schema.Format{
	Name: "occ-name",
	Description: "Name rule: 1 to 200 characters, no leading or trailing whitespace, " +
		"no control characters, U+2028, U+2029 or format characters (zero-width, bidi controls, soft hyphen, BOM).",
	Check: platform.ValidName,
}

// formats are the formats of the route table, for the reference validator of the tests.
var formats = []*schema.Format{occName}

// The schema constructors under the short names the route table reads.
var (
	object     = schema.Object
	openObject = schema.OpenObject
	required   = schema.Required
	optional   = schema.Optional
	str        = schema.String
	pattern    = schema.Pattern
	enum       = schema.Enum
	integer    = schema.Integer
	boolean    = schema.Boolean
	arrayOf    = schema.ArrayOf
	nullable   = schema.Nullable
	describe   = schema.Describe
	mapOf      = schema.MapOf
)

func idOf(prefix string) *schema.Schema { return pattern(platform.IDPattern(prefix), 0) }

func opaqueID() *schema.Schema { return pattern(platform.OpaqueIDPattern, 200) }

func name() *schema.Schema { return schema.Formatted(occName, 1, 200) }

func timestamp() *schema.Schema { return pattern(platform.TimestampPattern, 0) }
