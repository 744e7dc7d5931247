package schema

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/openclaw/occ/internal/problem"
)

func TestIntegerValue(t *testing.T) {
	t.Parallel()
	for lit, want := range map[string]struct {
		n     int64
		class IntegerClass
	}{
		"0": {0, IsInteger}, "-0": {0, IsInteger}, "1.0": {1, IsInteger}, "1e2": {100, IsInteger},
		"1.5e1": {15, IsInteger}, "150e-1": {15, IsInteger}, "1.5": {0, NotInteger}, "1e-1": {0, NotInteger},
		"9223372036854775807": {9223372036854775807, IsInteger}, "9223372036854775808": {0, HugeInteger},
		"1e999999999999999999999": {0, HugeInteger}, "1e-999999999999999999999": {0, NotInteger},
		"0e999999999999999999999": {0, IsInteger}, "0.000": {0, IsInteger}, "-12.30e1": {-123, IsInteger},
		"100000000000000000000e-2": {1000000000000000000, IsInteger},
		// Exponents at the edge of int64 (the probe's panics): no overflow, no huge allocation.
		"1e9223372036854775807": {0, HugeInteger}, "1e-9223372036854775808": {0, NotInteger},
		"1.5e-9223372036854775808": {0, NotInteger}, "-1e9223372036854775807": {0, HugeInteger},
		"1.5e9223372036854775807": {0, HugeInteger}, "10e-9223372036854775807": {0, NotInteger},
		"1e25": {0, HugeInteger}, "1000e-3": {1, IsInteger},
	} {
		n, class := IntegerLiteral(lit)
		if n != want.n || class != want.class {
			t.Errorf("%s: %d %d, want %d %d", lit, n, class, want.n, want.class)
		}
	}
}

func TestEnumRefusalListsTheAllowedValues(t *testing.T) {
	t.Parallel()
	s := Object(Required("mode", Enum("inCluster", "kubeconfig")), Optional("none", Nullable(&Schema{Type: TypeString, Enum: []string{}})))
	s.Prepare()
	v := &Validation{}
	s.Validate(v, map[string]any{"mode": "token", "none": "x"}, "")
	want := []problem.Detail{
		{Path: "/mode", Code: problem.DetailInvalidValue, Message: "Must be one of: inCluster, kubeconfig."},
		{Path: "/none", Code: problem.DetailInvalidValue, Message: "No value is accepted."},
	}
	if len(v.Details) != len(want) || v.Details[0] != want[0] || v.Details[1] != want[1] {
		t.Fatalf("details = %v, want %v", v.Details, want)
	}
}

// The API's details carry paths and codes only; explained ones carry fixed sentences, and an
// object may name its own for unknown or refused members.
func TestSentencesOnlyWhenExplained(t *testing.T) {
	t.Parallel()
	s := Object(Required("name", String(0, 3)), Optional("n", SafeInteger(1, 2)))
	s.Refused = map[string]string{"old": "Retired."}
	s.Prepare()
	doc := map[string]any{"name": "abcd", "n": json.Number("9007199254740993"), "old": 1, "x": 1}
	plain := &Validation{}
	s.Validate(plain, doc, "")
	explained := &Validation{Explain: true}
	s.Validate(explained, doc, "")
	want := []problem.Detail{
		{Path: "/old", Code: problem.DetailUnknownField, Message: "Retired."},
		{Path: "/x", Code: problem.DetailUnknownField, Message: "This option is not supported."},
		{Path: "/name", Code: problem.DetailTooLong, Message: "Must be at most 3 characters long."},
		{Path: "/n", Code: problem.DetailInvalidType, Message: "Must be an integer."},
	}
	if !reflect.DeepEqual(explained.Details, want) {
		t.Fatalf("explained = %v, want %v", explained.Details, want)
	}
	for i := range want {
		if i > 0 {
			want[i].Message = ""
		}
	}
	if !reflect.DeepEqual(plain.Details, want) {
		t.Fatalf("plain = %v, want %v", plain.Details, want)
	}
	s.UnknownMessage = "Unsupported option."
	own := &Validation{}
	s.Validate(own, map[string]any{"name": "a", "x": 1}, "")
	if len(own.Details) != 1 || own.Details[0].Message != "Unsupported option." {
		t.Fatalf("own sentence: %v", own.Details)
	}
}
