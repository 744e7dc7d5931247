package installcfg

import (
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strconv"

	"github.com/openclaw/occ/internal/obs"
	"github.com/openclaw/occ/internal/problem"
)

// maxSafeInteger is 2^53-1.
const maxSafeInteger = 1<<53 - 1

// maxDepth bounds the nesting of objects and lists (the root object is depth 1).
const maxDepth = 32

// credentialKey names keys whose string values are plaintext credentials.
var credentialKey = regexp.MustCompile(
	`(?i)(?:password|passwd|api[_-]?key|(?:access[_-]?)?token|private[_-]?key|(?:client[_-]?)?secret|credentials?)$`)

// scan is the first step of validation, before any schema check: it walks the whole document and
// records every value or key that must never be accepted, wherever it appears.
func scan(v any, path string, depth int, ds *details) {
	if ds.full() {
		return
	}
	switch t := v.(type) {
	case map[string]any:
		if depth > maxDepth {
			ds.add(path, problem.DetailTooDeep, msgTooDeep)
			return
		}
		for _, k := range sortedKeys(t) {
			kp, reportable := child(path, k)
			if !reportable && credentialLike(k) {
				ds.add(path, problem.DetailInvalidValue, msgPlaintext)
			}
			switch k {
			case "installationId", "installation_id":
				ds.add(kp, problem.DetailInvalidValue, msgSingleton)
			case "__proto__", "constructor", "prototype":
				ds.add(kp, problem.DetailInvalidValue, msgUnsafeKey)
			case "secretRef":
				ds.add(kp, problem.DetailInvalidValue, msgSecretRef)
			}
			if _, isString := t[k].(string); isString && credentialKey.MatchString(k) {
				ds.add(kp, problem.DetailInvalidValue, msgPlaintext)
				continue
			}
			scan(t[k], kp, depth+1, ds)
		}
	case []any:
		if depth > maxDepth {
			ds.add(path, problem.DetailTooDeep, msgTooDeep)
			return
		}
		for i, e := range t {
			scan(e, index(path, i), depth+1, ds)
		}
	case string:
		if obs.LooksLikeSecret(t) {
			ds.add(path, problem.DetailInvalidValue, msgPlaintext)
		}
	case json.Number:
		if !safeNumber(t) {
			ds.add(path, problem.DetailInvalidValue, msgUnsafeInteger)
		}
	}
}

// safeNumber reports whether n is not an integer outside ±(2^53-1). Fractions are left to the
// schema; a number too large for float64 is unsafe.
func safeNumber(n json.Number) bool {
	s := string(n)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i >= -maxSafeInteger && i <= maxSafeInteger
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return false
	}
	return f != math.Trunc(f) || math.Abs(f) <= maxSafeInteger
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
