package audit

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRedactSensitiveKeys(t *testing.T) {
	redacted := []string{
		"access_token", "accessToken", "access-token", "ACCESS_TOKEN",
		"api_key", "apiKey", "x-api-key", "API-KEY",
		"authorization", "Authorization", "proxyAuthorization",
		"bearer", "bearerValue",
		"client_secret", "clientSecret",
		"cookie", "Set-Cookie", "cookies",
		"credential", "credentials", "providerCredentials",
		"password", "Password", "newPassword", "password_hint",
		"private_key", "privateKey", "private-key",
		"provider_credential", "provider_token", "providerToken",
		"refresh_token", "refreshToken",
		"secret", "secrets", "webhookSecret",
		"session_cookie", "session_token", "sessionToken",
		"token", "tokens", "idToken", "token_value",
		"body", "requestBody", "Body",
		"content", "contents", "fileContent",
		"message", "messages", "errorMessage",
		"prompt", "systemPrompt",
		"text", "plaintext", "context", // substring match: "context" contains "text"
		"transcript", "transcripts",
	}
	kept := []string{
		// the suffix exceptions
		"serviceKeyId", "secretId", "secret_id", "secretIds", "tokenIDS", "secretRef", "credential_ref",
		"secretReference", "secretName", "secretNames", "credentialKind", "messageCount", "token_count",
		"promptName", "TEXT_KIND",
		// ordinary identifiers from the evidence and IAM events
		"roleId", "permissions", "bindingId", "subjectKind", "subjectId", "runtimeRole", "removedAccessBindings",
		"actorServiceKeyId", "initiatingActorId", "takeover", "reasonCode", "attemptCount", "workId", "final",
		"refusal", "stopYielded", "revision", "source", "pod", "container", "previous", "lineCount", "viewId",
		"permission",
	}
	in := map[string]any{}
	for _, k := range append(append([]string(nil), redacted...), kept...) {
		in[k] = "plain-value"
	}
	out := Redact(in).(map[string]any)
	for _, k := range redacted {
		if out[k] != Redacted {
			t.Errorf("%q = %v, want redacted", k, out[k])
		}
	}
	for _, k := range kept {
		if out[k] != "plain-value" {
			t.Errorf("%q = %v, want kept", k, out[k])
		}
	}
	if len(out) != len(in) {
		t.Errorf("members: %d, want %d", len(out), len(in))
	}
}

func TestRedactReplacesWholeValuesOfSensitiveKeys(t *testing.T) {
	out := Redact(map[string]any{
		"credentials": map[string]any{"user": "u", "id": "x"},
		"tokens":      []any{"a", "b"},
		"password":    nil,
		"secret":      42,
	}).(map[string]any)
	for k, v := range out {
		if v != Redacted {
			t.Errorf("%s = %v", k, v)
		}
	}
}

func TestRedactNested(t *testing.T) {
	in := map[string]any{
		"roleId": "role_1",
		"items": []any{
			map[string]any{"name": "a", "password": "p", "nested": []any{map[string]any{"apiKey": "k", "count": 3}}},
			"Bearer abc.def-123",
			[]any{"sk-proj-abcdefghijklmnop", 1.5, true, nil},
		},
		"typed": map[string][]string{"secretRef": {"ref"}, "tokens": {"t"}, "list": {"ghp_abcdefghijklmnopqrstuvwxyz"}},
	}
	want := map[string]any{
		"roleId": "role_1",
		"items": []any{
			map[string]any{"name": "a", "password": Redacted, "nested": []any{map[string]any{"apiKey": Redacted, "count": int64(3)}}},
			Redacted,
			[]any{Redacted, 1.5, true, nil},
		},
		"typed": map[string]any{"secretRef": []any{"ref"}, "tokens": Redacted, "list": []any{Redacted}},
	}
	if got := Redact(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("Redact:\n got %#v\nwant %#v", got, want)
	}
}

func TestRedactStrings(t *testing.T) {
	cases := map[string]string{
		"plain":                             "plain",
		"Bearer x":                          Redacted,
		"header Bearer abc.def-123 end":     "header " + Redacted + " end",
		"bearer x":                          Redacted,
		"key=sk-proj-abcdefghijklmnop":      "key=" + Redacted,
		"short sk-abc":                      "short " + Redacted,
		"gh ghp_abcdefghijklmnopqrstuvwxyz": "gh " + Redacted,
		"gh ghp-abc gho_abc":                "gh " + Redacted + " " + Redacted,
		"slack xoxb-1234-abcd":              "slack " + Redacted,
		"aws AKIAABCDEFGHIJKLMNOP":          "aws " + Redacted,
		"-----BEGIN RSA PRIVATE KEY-----":   Redacted,
		"x -----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY----- y": "x " + Redacted + " y",
		"line1\nline2\ttab\x00nul\x7fdel\u0085":                            "line1 line2 tab nul del ",
		"Bearer\x00abc":                                                    Redacted, // control character first becomes a space
		"task-runner":                                                      "task-runner",
	}
	for in, want := range cases {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactDroppedKeys(t *testing.T) {
	out := Redact(map[string]any{
		"__proto__": map[string]any{"admin": true}, "constructor": "x", "prototype": 1, "ok": 1,
		"sk-proj-abcdefghijklmnop": "key is a secret", "line\nbreak": "v",
	}).(map[string]any)
	want := map[string]any{"ok": int64(1), "line break": "v"}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("got %#v", out)
	}
}

// nest returns v wrapped in n single-member objects.
func nest(n int, v any) any {
	for range n {
		v = map[string]any{"n": v}
	}
	return v
}

func TestRedactDepth(t *testing.T) {
	// The argument is depth 0; a leaf under 16 objects is at depth 16 and kept.
	if got := Redact(nest(16, "leaf")); !reflect.DeepEqual(got, nest(16, "leaf")) {
		t.Fatalf("depth 16 changed: %v", got)
	}
	// A leaf under 17 objects is at depth 17: replaced, the 16 levels above it kept.
	if got := Redact(nest(17, "leaf")); !reflect.DeepEqual(got, nest(17, Redacted)) {
		t.Fatalf("depth 17: %v", got)
	}
	if got := Redact(nest(17, map[string]any{"a": 1})); !reflect.DeepEqual(got, nest(17, Redacted)) {
		t.Fatalf("object at depth 17: %v", got)
	}
	arr := any("leaf")
	for range 17 {
		arr = []any{arr}
	}
	want := any(Redacted)
	for range 17 {
		want = []any{want}
	}
	if got := Redact(arr); !reflect.DeepEqual(got, want) {
		t.Fatalf("arrays at depth 17: %v", got)
	}
}

func TestRedactCycles(t *testing.T) {
	m := map[string]any{"id": "a"}
	m["self"] = m
	out := Redact(m).(map[string]any)
	if out["self"] != Redacted || out["id"] != "a" {
		t.Fatalf("map cycle: %v", out)
	}
	s := []any{1, nil}
	s[1] = s
	if got := Redact(s); !reflect.DeepEqual(got, []any{int64(1), Redacted}) {
		t.Fatalf("slice cycle: %v", got)
	}
	p := new(any)
	*p = p
	if got := Redact(p); got != Redacted {
		t.Fatalf("pointer cycle: %v", got)
	}
	type node struct {
		ID   string
		Next *node
	}
	n := &node{ID: "n"}
	n.Next = n
	if got := Redact(map[string]any{"node": n}).(map[string]any)["node"]; got != Redacted {
		t.Fatalf("struct cycle: %v", got)
	}
	// The same map twice, not nested, is not a cycle.
	shared := map[string]any{"id": "s"}
	out = Redact(map[string]any{"a": shared, "b": shared}).(map[string]any)
	if !reflect.DeepEqual(out["a"], map[string]any{"id": "s"}) || !reflect.DeepEqual(out["b"], map[string]any{"id": "s"}) {
		t.Fatalf("shared map: %v", out)
	}
}

type codeErr struct{ code string }

func (e codeErr) Error() string { return "failed with sk-proj-abcdefghijklmnop " + e.code }

func TestRedactErrors(t *testing.T) {
	pathErr := &fs.PathError{Op: "open", Path: "/secret/file", Err: fs.ErrNotExist}
	cases := []struct {
		err  error
		name string
	}{
		{errors.New("password is hunter2"), "errors.errorString"},
		{pathErr, "fs.PathError"},
		{codeErr{"X"}, "audit.codeErr"},
	}
	for _, c := range cases {
		got := Redact(map[string]any{"cause": c.err}).(map[string]any)["cause"]
		if want := map[string]any{"name": c.name, "reason": Redacted}; !reflect.DeepEqual(got, want) {
			t.Errorf("%T: %v, want %v", c.err, got, want)
		}
	}
	if got := Redact(errors.New("x")); !reflect.DeepEqual(got, map[string]any{"name": "errors.errorString", "reason": Redacted}) {
		t.Errorf("top-level error: %v", got)
	}
}

type tagged struct {
	RoleID   string `json:"roleId"`
	Password string `json:"password"`
	Note     string `json:"note"`
	Hidden   string `json:"-"`
}

type level int

func TestRedactOtherTypes(t *testing.T) {
	at := time.Date(2026, 11, 30, 8, 40, 59, 0, time.UTC)
	nsID := "ns_1"
	got := Redact(map[string]any{
		"struct":   tagged{RoleID: "role_1", Password: "p", Note: "Bearer abc", Hidden: "h"},
		"ptr":      &nsID,
		"nilPtr":   (*string)(nil),
		"time":     at,
		"bytes":    []byte("raw"),
		"raw":      json.RawMessage(`{"token":"t","id":"x"}`),
		"number":   json.Number("12.5"),
		"badNum":   json.Number("Bearer x"),
		"nan":      math.NaN(),
		"named":    level(3),
		"uint":     uint8(7),
		"intKeys":  map[int]string{1: "a"},
		"badKeys":  map[[2]int]string{{1, 2}: "a"},
		"func":     func() {},
		"chan":     make(chan int),
		"nilMap":   map[string]any(nil),
		"nilSlice": []string(nil),
		"array":    [2]string{"a", "sk-abc"},
	}).(map[string]any)
	want := map[string]any{
		"struct":   map[string]any{"roleId": "role_1", "password": Redacted, "note": Redacted},
		"ptr":      "ns_1",
		"nilPtr":   nil,
		"time":     "2026-11-30T08:40:59Z",
		"bytes":    Redacted,
		"raw":      map[string]any{"token": Redacted, "id": "x"},
		"number":   json.Number("12.5"),
		"badNum":   Redacted,
		"nan":      nil,
		"named":    int64(3),
		"uint":     uint64(7),
		"intKeys":  map[string]any{"1": "a"},
		"badKeys":  Redacted,
		"func":     Redacted,
		"chan":     Redacted,
		"nilMap":   nil,
		"nilSlice": nil,
		"array":    []any{"a", Redacted},
	}
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("%s = %#v, want %#v", k, got[k], w)
		}
	}
	if b, err := json.Marshal(got); err != nil || strings.Contains(string(b), "sk-abc") {
		t.Fatalf("marshal: %s %v", b, err)
	}
}

func FuzzRedactString(f *testing.F) {
	for _, s := range []string{"plain", "Bearer abc.def-123", "sk-proj-abcdefghijklmnop", "-----BEGIN PRIVATE KEY-----", "a\x00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Redact(map[string]any{"note": s, "list": []any{s}}).(map[string]any)
		for _, v := range []any{out["note"], out["list"].([]any)[0]} {
			got := v.(string)
			if strings.ContainsFunc(got, isControl) {
				t.Fatalf("control character kept: %q", got)
			}
			if looksLikeSecret(got) {
				t.Fatalf("credential kept: %q → %q", s, got)
			}
		}
	})
}
