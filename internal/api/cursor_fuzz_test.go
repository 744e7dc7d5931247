package api

import (
	"encoding/base64"
	"errors"
	"net/http"
	"testing"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
)

// listCalls returns, for every paged route, a call on one list (a) and a call on the same route
// under another scope (b: other path parameters and filters).
func listCalls() [][2]*call {
	var out [][2]*call
	for _, r := range Routes() {
		if !r.Paged {
			continue
		}
		a := &call{route: r, params: map[string]string{}, query: map[string]string{"filter": "a"}}
		b := &call{route: r, params: map[string]string{}, query: map[string]string{"filter": "b"}}
		for name := range r.PathParams {
			a.params[name], b.params[name] = "a-"+name, "b-"+name
		}
		out = append(out, [2]*call{a, b})
	}
	return out
}

// withCursor is c with the query's cursor set to raw.
func withCursor(c *call, raw string) *call {
	q := map[string]string{"cursor": raw}
	for k, v := range c.query {
		if k != "cursor" {
			q[k] = v
		}
	}
	return &call{route: c.route, params: c.params, query: q}
}

// checkCursorVerdict fails unless decodeCursor's answer is the coded 400 at /cursor or a position of
// c's own list that is safe to hand to the store (valid name, opaque id without NUL or controls).
func checkCursorVerdict(t *testing.T, c *call, raw string, doc *cursorDoc, err error) {
	t.Helper()
	if err != nil {
		var pe *platform.Error
		if !errors.As(err, &pe) || pe.Code != platform.CodeInvalidRequest || pe.Status() != http.StatusBadRequest ||
			len(pe.Details) != 1 || pe.Details[0].Path != "/cursor" || pe.Details[0].Code != problem.DetailInvalidFormat {
			t.Fatalf("%s cursor %q: %v, want the coded 400 at /cursor", c.route.Path, raw, err)
		}
		return
	}
	if doc == nil {
		t.Fatalf("%s cursor %q: neither a position nor an error", c.route.Path, raw)
	}
	if doc.Route != c.route.Action || doc.Scope != c.listScope() {
		t.Fatalf("%s cursor %q: accepted another list's cursor %+v", c.route.Path, raw, doc)
	}
	if (doc.Name != "" && !platform.ValidName(doc.Name)) || (doc.ID != "" && !platform.ValidOpaqueID(doc.ID)) {
		t.Fatalf("%s cursor %q: accepted position %+v", c.route.Path, raw, doc)
	}
}

// FuzzDecodeCursor: any cursor text given to any list either decodes to a position of that very
// list or is refused with 400 INVALID_REQUEST at /cursor (never a panic, never a NUL or invalid
// UTF-8 position that PostgreSQL would refuse with a 503); a cursor one list accepts, the same
// route under another scope refuses.
func FuzzDecodeCursor(f *testing.F) {
	for _, seed := range []string{"", "%00", "AA", "e30", "bnVsbA", "W10",
		base64.RawURLEncoding.EncodeToString([]byte(`{"r":"x","i":"\u0000"}`)),
		base64.RawURLEncoding.EncodeToString([]byte("{\"i\":\"\xc0\xae\"}")),
		base64.RawURLEncoding.EncodeToString([]byte(`{"r":1,"t":1e400}`))} {
		f.Add(seed)
	}
	lists := listCalls()
	f.Fuzz(func(t *testing.T, raw string) {
		for _, l := range lists {
			a, b := withCursor(l[0], raw), withCursor(l[1], raw)
			doc, err := a.decodeCursor()
			checkCursorVerdict(t, a, raw, doc, err)
			if err == nil {
				if _, err := b.decodeCursor(); err == nil {
					t.Fatalf("%s cursor %q: accepted under two scopes", a.route.Path, raw)
				}
			}
		}
	})
}

// FuzzCursorPosition encodes a position as a list does, then decodes it: on its own list a valid
// position comes back unchanged and a hostile one (NUL, invalid UTF-8, control characters) is the
// coded 400; the same route under another scope refuses it; and with one character changed the
// cursor is either refused or still a safe position of the same list.
func FuzzCursorPosition(f *testing.F) {
	f.Add("", int64(1767225600000000), "role_0c3e9a4e-0000-4000-8000-000000000000", uint(10))
	f.Add("team-a", int64(0), "", uint(0))
	f.Add("", int64(-1), "role\x00x", uint(3))
	f.Add("", int64(1), "\xc0\xae", uint(40))
	f.Add("", int64(1), "a\u0085b", uint(7))
	f.Add("a\x00b", int64(1), "", uint(1))
	f.Add("\u200b", int64(9223372036854775807), "x", uint(99))
	lists := listCalls()
	f.Fuzz(func(t *testing.T, name string, micro int64, id string, flip uint) {
		for _, l := range lists {
			a, b := l[0], l[1]
			cur := a.encodeCursor(cursorDoc{Name: name, Micro: micro, ID: id})
			doc, err := withCursor(a, cur).decodeCursor()
			checkCursorVerdict(t, a, cur, doc, err)
			valid := (name == "" || platform.ValidName(name)) && (id == "" || platform.ValidOpaqueID(id))
			if valid && (err != nil || doc.Name != name || doc.Micro != micro || doc.ID != id) {
				t.Fatalf("%s position %q %d %q: round trip %+v, %v", a.route.Path, name, micro, id, doc, err)
			}
			if _, err := withCursor(b, cur).decodeCursor(); err == nil {
				t.Fatalf("%s position %q %d %q: accepted under another scope", a.route.Path, name, micro, id)
			}
			tampered := []byte(cur)
			i := int(flip % uint(len(tampered)))
			tampered[i] = cursorAlphabet[(int(flip/uint(len(tampered)))+1+indexOf(tampered[i]))%len(cursorAlphabet)]
			doc, err = withCursor(a, string(tampered)).decodeCursor()
			checkCursorVerdict(t, a, string(tampered), doc, err)
		}
	})
}

const cursorAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func indexOf(c byte) int {
	for i := range len(cursorAlphabet) {
		if cursorAlphabet[i] == c {
			return i
		}
	}
	return 0
}
