package schema

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

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

// maxSafeInteger is the largest integer every JSON consumer represents exactly (2^53-1).
const maxSafeInteger = 1<<53 - 1

// integerOf classifies a number of any Go type a YAML or JSON decoder produces; isNumber is false
// for every other value.
func integerOf(v any) (n int64, class IntegerClass, isNumber bool) {
	switch x := v.(type) {
	case json.Number:
		n, class = IntegerLiteral(string(x))
		return n, class, true
	case int:
		return int64(x), IsInteger, true
	case int8:
		return int64(x), IsInteger, true
	case int16:
		return int64(x), IsInteger, true
	case int32:
		return int64(x), IsInteger, true
	case int64:
		return x, IsInteger, true
	case uint:
		return unsigned(uint64(x))
	case uint8:
		return int64(x), IsInteger, true
	case uint16:
		return int64(x), IsInteger, true
	case uint32:
		return int64(x), IsInteger, true
	case uint64:
		return unsigned(x)
	case float32:
		return integerOf(float64(x))
	case float64:
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0) || x != math.Trunc(x):
			return 0, NotInteger, true
		case math.Abs(x) >= 1<<63:
			return 0, HugeInteger, true
		}
		return int64(x), IsInteger, true
	}
	return 0, NotInteger, false
}

func unsigned(x uint64) (int64, IntegerClass, bool) {
	if x > math.MaxInt64 {
		return 0, HugeInteger, true
	}
	return int64(x), IsInteger, true
}

func safe(n int64) bool { return n >= -maxSafeInteger && n <= maxSafeInteger }

// IntegerValue returns v as an int64 when it is an integer of any Go numeric type a YAML or JSON
// decoder produces (whole float64 and json.Number included, the latter judged on its digits: 1.0
// and 1e2 are integers, 4.0000000000000000001 is not) within the safe-integer range.
func IntegerValue(v any) (int64, bool) {
	n, class, isNumber := integerOf(v)
	if !isNumber || class != IsInteger || !safe(n) {
		return 0, false
	}
	return n, true
}
