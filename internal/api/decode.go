package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/schema"
)

// Request limits.
const (
	// DefaultBodyLimit bounds a request body unless the route sets its own.
	DefaultBodyLimit = 64 << 10
	// MaxJSONDepth bounds the nesting of a request document.
	MaxJSONDepth = 24
)

var (
	errBadJSON = platform.NewError(platform.CodeInvalidRequest, "The request body is not valid JSON.",
		problem.Detail{Path: "", Code: problem.DetailInvalidFormat})
	errTooLarge         = platform.NewError(platform.CodePayloadTooLarge, "The request body is too large.")
	errUnsupportedMedia = platform.NewError(platform.CodeUnsupportedMediaType, "The request body must be application/json.")
)

// jsonContentType reports whether a Content-Type header names JSON (application/json, optionally
// with charset=utf-8 and nothing else).
func jsonContentType(values []string) bool {
	if len(values) != 1 {
		return false
	}
	mediaType, params, err := mime.ParseMediaType(values[0])
	if err != nil || mediaType != "application/json" {
		return false
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return false
		}
	}
	return true
}

// readBody reads a request body within limit, enforcing the media type of a non-empty body first
// (415 before 413, as the processing order says).
func readBody(r *http.Request, limit int64) ([]byte, *platform.Error) {
	jsonType := jsonContentType(r.Header.Values("Content-Type"))
	if r.ContentLength > 0 && !jsonType {
		return nil, errUnsupportedMedia
	}
	if r.ContentLength > limit {
		return nil, errTooLarge
	}
	if r.Body == nil || r.ContentLength == 0 {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, errBadJSON
	}
	if len(body) > 0 && !jsonType {
		return nil, errUnsupportedMedia
	}
	if int64(len(body)) > limit {
		return nil, errTooLarge
	}
	return body, nil
}

// decodeBody turns a request body into the canonical JSON of a value that satisfies schema. An
// empty body is the empty object when the schema has no required member (routes without a body
// accept nothing or {}), and a missing document otherwise. The result feeds a typed
// json.Unmarshal.
func decodeBody(s *schema.Schema, body []byte) (json.RawMessage, *platform.Error) {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
		if s != nil && hasRequired(s) {
			return nil, platform.NewError(platform.CodeInvalidRequest, "A request body is required.",
				problem.Detail{Path: "", Code: problem.DetailRequired})
		}
	}
	value, perr := decodeJSON(body)
	if perr != nil {
		return nil, perr
	}
	if s == nil {
		s = emptyBody
	}
	v := &schema.Validation{}
	normalized := s.Validate(v, value, "")
	if len(v.Details) > 0 {
		return nil, platform.NewError(platform.CodeInvalidRequest, "The request is invalid.", v.Details...)
	}
	out, err := json.Marshal(normalized)
	if err != nil {
		return nil, errBadJSON
	}
	return out, nil
}

// emptyBody is the schema of routes that take no body: nothing, or exactly {}.
var emptyBody = object()

func hasRequired(s *schema.Schema) bool {
	for _, p := range s.Properties {
		if p.Required {
			return true
		}
	}
	return false
}

// decodeJSON parses exactly one JSON document into map[string]any, []any, string, json.Number,
// bool and nil. Beyond encoding/json it refuses invalid UTF-8, lone UTF-16 surrogate escapes,
// duplicate object members (each is reported) and nesting deeper than MaxJSONDepth.
func decodeJSON(data []byte) (any, *platform.Error) {
	if !utf8.Valid(data) || hasLoneSurrogate(data) {
		return nil, errBadJSON
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	d := &jsonDecoder{dec: dec}
	tok, err := dec.Token()
	if err != nil {
		return nil, errBadJSON
	}
	value, err := d.value(tok, "", 0)
	if err != nil {
		return nil, d.failure(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errBadJSON
	}
	return value, nil
}

type jsonDecoder struct {
	dec      *json.Decoder
	problems []problem.Detail
}

var (
	errSyntax    = errors.New("syntax")
	errDuplicate = errors.New("duplicate member")
	errTooDeep   = errors.New("too deep")
)

func (d *jsonDecoder) failure(err error) *platform.Error {
	switch {
	case errors.Is(err, errDuplicate):
		return platform.NewError(platform.CodeInvalidRequest, "The request body repeats an object member.", d.problems...)
	case errors.Is(err, errTooDeep):
		return platform.NewError(platform.CodeInvalidRequest, "The request body is nested too deeply.", d.problems...)
	}
	return errBadJSON
}

func (d *jsonDecoder) value(tok json.Token, path string, depth int) (any, error) {
	switch t := tok.(type) {
	case json.Delim:
		if depth+1 > MaxJSONDepth {
			d.problems = []problem.Detail{{Path: path, Code: problem.DetailTooDeep}}
			return nil, errTooDeep
		}
		switch t {
		case '{':
			obj := map[string]any{}
			for d.dec.More() {
				keyTok, err := d.dec.Token()
				if err != nil {
					return nil, errSyntax
				}
				key, ok := keyTok.(string)
				if !ok {
					return nil, errSyntax
				}
				memberPath := path + problem.JSONPointer(key)
				if _, dup := obj[key]; dup {
					d.problems = []problem.Detail{{Path: memberPath, Code: problem.DetailInvalidFormat}}
					return nil, errDuplicate
				}
				next, err := d.dec.Token()
				if err != nil {
					return nil, errSyntax
				}
				v, err := d.value(next, memberPath, depth+1)
				if err != nil {
					return nil, err
				}
				obj[key] = v
			}
			if end, err := d.dec.Token(); err != nil || end != json.Delim('}') {
				return nil, errSyntax
			}
			return obj, nil
		case '[':
			arr := []any{}
			for i := 0; d.dec.More(); i++ {
				next, err := d.dec.Token()
				if err != nil {
					return nil, errSyntax
				}
				v, err := d.value(next, path+"/"+itoa(i), depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if end, err := d.dec.Token(); err != nil || end != json.Delim(']') {
				return nil, errSyntax
			}
			return arr, nil
		}
		return nil, errSyntax
	case string, json.Number, bool, nil:
		return t, nil
	}
	return nil, errSyntax
}

// hasLoneSurrogate reports whether a JSON text escapes an unpaired UTF-16 surrogate (\ud800 without
// a following \udc00, or the reverse), which encoding/json would silently turn into U+FFFD.
func hasLoneSurrogate(data []byte) bool {
	inString, pendingHigh := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if !inString {
			if c == '"' {
				inString = true
			}
			continue
		}
		switch c {
		case '"':
			if pendingHigh {
				return true
			}
			inString = false
		case '\\':
			if i+1 >= len(data) {
				return false
			}
			i++
			if data[i] != 'u' {
				if pendingHigh {
					return true
				}
				continue
			}
			if i+4 >= len(data) {
				return false
			}
			code, ok := hex4(data[i+1 : i+5])
			i += 4
			if !ok {
				return false // a syntax error encoding/json reports
			}
			switch {
			case code >= 0xD800 && code <= 0xDBFF:
				if pendingHigh {
					return true
				}
				pendingHigh = true
			case code >= 0xDC00 && code <= 0xDFFF:
				if !pendingHigh {
					return true
				}
				pendingHigh = false
			default:
				if pendingHigh {
					return true
				}
			}
		default:
			if pendingHigh {
				return true
			}
		}
	}
	return false
}

func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// QueryParam is one accepted query-string parameter. Values are exact text: integers are plain
// decimal digits, never coerced from anything else.
type QueryParam struct {
	Name        string
	Schema      *schema.Schema // string or integer
	Description string
}

var decimalDigits = regexp.MustCompile(`^(0|[1-9][0-9]{0,17})$`)

// decodeQuery validates the query string against params: unknown or repeated parameters, wrong
// types and rule violations are 400 with details naming the parameter ("/limit").
func decodeQuery(raw string, params []QueryParam) (map[string]string, *platform.Error) {
	values, err := url.ParseQuery(raw)
	if err != nil {
		return nil, platform.NewError(platform.CodeInvalidRequest, "The query string is malformed.",
			problem.Detail{Path: "", Code: problem.DetailInvalidFormat})
	}
	v := &schema.Validation{}
	out := map[string]string{}
	names := make([]string, 0, len(values))
	for k := range values {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		path := problem.JSONPointer(k)
		i := slices.IndexFunc(params, func(p QueryParam) bool { return p.Name == k })
		if i < 0 {
			v.Add(path, problem.DetailUnknownField)
			continue
		}
		vals := values[k]
		if len(vals) != 1 {
			v.Add(path, problem.DetailInvalidType)
			continue
		}
		// Query values are text: invalid UTF-8 and control characters are never a valid filter,
		// and must not reach the database.
		if !printableText(vals[0]) {
			v.Add(path, problem.DetailInvalidFormat)
			continue
		}
		s := params[i].Schema
		if s.Type == schema.TypeInteger {
			if !decimalDigits.MatchString(vals[0]) {
				v.Add(path, problem.DetailInvalidType)
				continue
			}
			s.Validate(v, json.Number(vals[0]), path)
		} else {
			s.Validate(v, vals[0], path)
		}
		out[k] = vals[0]
	}
	if len(v.Details) > 0 {
		return nil, platform.NewError(platform.CodeInvalidRequest, "The query string is invalid.", v.Details...)
	}
	return out, nil
}

// printableText reports whether s is valid UTF-8 without C0, DEL or C1 control characters.
func printableText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r <= 0x1f || (r >= 0x7f && r <= 0x9f) {
			return false
		}
	}
	return true
}
