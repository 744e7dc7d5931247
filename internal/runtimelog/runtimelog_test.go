package runtimelog

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestRedactMasksCredentialPatterns(t *testing.T) {
	cases := map[string]struct{ in, secret, want string }{
		"bearer":        {in: "GET / Authorization: Bearer abc.def-ghi", secret: "abc.def-ghi", want: "[redacted:authorization]"},
		"bearer alone":  {in: "sent bearer Zm9vYmFyYmF6cXV4", secret: "Zm9vYmFyYmF6cXV4", want: "[redacted:bearer]"},
		"cookie":        {in: "cookie: session=s3cr3tvalue", secret: "s3cr3tvalue", want: "[redacted:cookie]"},
		"jwt":           {in: "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig_nature", secret: "eyJhbGciOiJIUzI1NiJ9", want: "[redacted:"},
		"openai":        {in: "using sk-proj-abcdefghijklmnop1234", secret: "abcdefghijklmnop1234", want: "[redacted:token]"},
		"github":        {in: "clone with ghp_0123456789abcdefABCDEF", secret: "ghp_0123456789abcdefABCDEF", want: "[redacted:token]"},
		"aws":           {in: "key AKIAIOSFODNN7EXAMPLE", secret: "AKIAIOSFODNN7EXAMPLE", want: "[redacted:token]"},
		"url userinfo":  {in: "connect postgres://occ:hunter2pw@db:5432/x", secret: "hunter2pw", want: "postgres://[redacted:url-userinfo]@db"},
		"url query":     {in: "GET https://x.test/cb?code=abc123&state=xyz789", secret: "xyz789", want: "code=[redacted:url-query]"},
		"key value":     {in: `{"api_key": "live-key-value"} and password=opensesame`, secret: "opensesame", want: "password=[redacted:key-value]"},
		"quoted json":   {in: `"api_key": "live-key-value"`, secret: "live-key-value", want: `"api_key": [redacted:key-value]`},
		"env key":       {in: "OPENAI_API_KEY=abcdefg", secret: "abcdefg", want: "OPENAI_API_KEY=[redacted:"},
		"netrc":         {in: "machine h login bob password p4ssw0rd", secret: "p4ssw0rd", want: "password [redacted:netrc]"},
		"curl -u":       {in: "curl -u alice:wonderland https://x", secret: "wonderland", want: "-u [redacted:user-password]"},
		"token flag":    {in: "gh auth login --with-token tok_abcdef", secret: "tok_abcdef", want: "--with-token [redacted:credential-flag]"},
		"long base64":   {in: "blob QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9w end", secret: "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVph", want: "[redacted:base64]"},
		"long hex":      {in: "sha 0123456789abcdef0123456789abcdef01234567 ok", secret: "0123456789abcdef0123456789abcdef01234567", want: "[redacted:"},
		"pem one line":  {in: "-----BEGIN PRIVATE KEY-----MIIEvQ-----END PRIVATE KEY-----", secret: "MIIEvQ", want: "[redacted:pem]"},
		"known value":   {in: "the value is correct-horse", secret: "correct-horse", want: "[redacted:secret]"},
		"keeps id":      {in: "revision rev_2f6c1b9e-1111-4222-8333-444455556666 ready", secret: "", want: "rev_2f6c1b9e-1111-4222-8333-444455556666"},
		"keeps paths":   {in: "loaded /usr/local/lib/openclaw/extensions/gateway/plugins/index", secret: "", want: "/usr/local/lib/openclaw/extensions/gateway/plugins/index"},
		"keeps numbers": {in: "listening on :8080 after 1234 ms", secret: "", want: "listening on :8080 after 1234 ms"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Redact(tc.in, []string{"correct-horse"})
			if tc.secret != "" && strings.Contains(got, tc.secret) {
				t.Fatalf("Redact(%q) = %q: still holds %q", tc.in, got, tc.secret)
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("Redact(%q) = %q, want it to contain %q", tc.in, got, tc.want)
			}
			if again := Redact(got, nil); again != got {
				t.Fatalf("Redact is not idempotent: %q then %q", got, again)
			}
		})
	}
}

func TestRedactIgnoresShortKnownValues(t *testing.T) {
	if got := Redact("a b c ok", []string{"ok", ""}); got != "a b c ok" {
		t.Fatalf("short known values masked: %q", got)
	}
}

func TestStripControls(t *testing.T) {
	got := StripControls("a\x1b[31mred\x00\u202eevil\tx\xff")
	if got != "a[31mredevil x\uFFFD" {
		t.Fatalf("StripControls = %q", got)
	}
}

var t0 = time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func lines(texts ...string) []RawLine {
	out := make([]RawLine, len(texts))
	for i, s := range texts {
		out[i] = RawLine{Time: at(i * 10), Text: s}
	}
	return out
}

var stream = Stream{Source: "gateway", Pod: "gw-1", PodUID: "uid-1", Container: "gateway", RestartCount: 0}

func messages(p Page) []string {
	var out []string
	for _, r := range p.Records {
		if !r.Sanitized() {
			panic("unsanitized record")
		}
		switch r.Type {
		case TypeLine:
			out = append(out, r.Message)
		case TypeWithheld:
			out = append(out, "withheld:"+r.Reason+":"+itoa(r.Count))
		case TypeGap:
			out = append(out, "gap:"+r.Reason)
		}
	}
	return out
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestBuildClassifies(t *testing.T) {
	in := lines(
		"plain text line",
		`{"level":"info","subsystem":"gateway","message":"listening","status":200,"prompt":"secret stuff"}`,
		`{"level":"info","message":"the model replied: hello"}`,
		`{"level":"error","message":"Gateway failed to start: port in use"}`,
		`{"event":"runtime.startup_phase","phase":"config","outcome":"ok","ms":12,"env":"X"}`,
		`{"jsonrpc":"2.0","method":"turn","params":{"text":"hi"}}`,
		`{"jsonrpc":"2.0","id":2}`,
		`{"broken":`,
		`{"timestamp":"x","level":"WARN","target":"codex_core","fields":{"message":"retrying","status":429,"content":"c"}}`,
		strings.Repeat("x", MaxTextLineBytes+1),
	)
	p := Build(Input{Stream: stream, Lines: in})
	got := messages(p)
	want := []string{"plain text line", "listening", "withheld:reply_text:1", "Gateway failed to start: port in use",
		"runtime.startup_phase", "withheld:unrecognised_structured:2", "withheld:malformed:1", "retrying", "withheld:oversized:1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("records\n got %q\nwant %q", got, want)
	}
	if p.Withheld != 5 {
		t.Fatalf("Withheld = %d, want 5", p.Withheld)
	}
	gw := p.Records[1]
	if gw.Kind != KindOpenClaw || gw.Level != LevelInfo || gw.Subsystem != "gateway" || gw.Fields["status"] != 200.0 || gw.Fields["prompt"] != nil {
		t.Fatalf("openclaw record = %+v", gw)
	}
	if w := p.Records[4]; w.Kind != KindWrapper || w.Fields["phase"] != "config" || w.Fields["env"] != nil {
		t.Fatalf("wrapper record = %+v", w)
	}
	if c := p.Records[7]; c.Kind != KindCodex || c.Level != LevelWarn || c.Subsystem != "codex_core" || c.Fields["content"] != nil {
		t.Fatalf("codex record = %+v", c)
	}
	if p.Next.Time != at(90) || p.Next.AtTime != 1 || p.Next.PodUID != "uid-1" {
		t.Fatalf("Next = %+v", p.Next)
	}
}

func TestBuildRedactsEveryKeptString(t *testing.T) {
	in := lines(
		`{"level":"warn","subsystem":"auth sk-abcdefghijklmnopqr","message":"token=abcdef123","url":"https://h/x?key=zzzzzz"}`,
		"printed my-known-secret-value",
	)
	p := Build(Input{Stream: stream, Lines: in, Known: []string{"my-known-secret-value"}})
	raw, _ := json.Marshal(p.Records)
	for _, leak := range []string{"abcdefghijklmnopqr", "abcdef123", "zzzzzz", "my-known-secret-value"} {
		if strings.Contains(string(raw), leak) {
			t.Fatalf("page leaks %q: %s", leak, raw)
		}
	}
}

func TestBuildMasksMultiLinePEM(t *testing.T) {
	in := lines("before", "-----BEGIN RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA7", "dGhpcyBpcyBub3Q", "-----END RSA PRIVATE KEY-----", "after")
	p := Build(Input{Stream: stream, Lines: in[:3]})
	if !p.PEMOpen {
		t.Fatal("a page ending inside a PEM block must say so")
	}
	p2 := Build(Input{Stream: stream, Lines: in, After: &p.Next, PEMOpen: p.PEMOpen})
	got := append(messages(p), messages(p2)...)
	want := "before|[redacted:pem]|[redacted:pem]|[redacted:pem]|[redacted:pem]|after"
	if strings.Join(got, "|") != want {
		t.Fatalf("got %q", got)
	}
	if p2.PEMOpen {
		t.Fatal("the END line closes the block")
	}
}

func TestBuildFollowsWithoutDuplicates(t *testing.T) {
	same := at(5)
	first := []RawLine{{at(0), "a"}, {same, "b"}, {same, "c"}}
	p1 := Build(Input{Stream: stream, Lines: first})
	if p1.Next.Time != same || p1.Next.AtTime != 2 {
		t.Fatalf("Next = %+v", p1.Next)
	}
	// The runtime's clock stamps a third line with the same time; the next read starts at the
	// stop (rounded down) and holds the old lines again.
	second := []RawLine{{at(0), "a"}, {same, "b"}, {same, "c"}, {same, "d"}, {at(9), "e"}}
	p2 := Build(Input{Stream: stream, Lines: second, After: &p1.Next})
	if got := strings.Join(messages(p2), "|"); got != "d|e" {
		t.Fatalf("second page = %q", got)
	}
	p3 := Build(Input{Stream: stream, Lines: second, After: &p2.Next})
	if len(p3.Records) != 0 || p3.Next != p2.Next {
		t.Fatalf("a poll with nothing new = %q, next %+v", messages(p3), p3.Next)
	}
}

func TestBuildLabelsLoss(t *testing.T) {
	p1 := Build(Input{Stream: stream, Lines: lines("a", "b")})
	restarted := stream
	restarted.RestartCount = 1
	p2 := Build(Input{Stream: restarted, Lines: lines("x"), After: &p1.Next})
	if got := strings.Join(messages(p2), "|"); got != "gap:stream_replaced|x" {
		t.Fatalf("after a restart = %q", got)
	}
	newer := []RawLine{{at(100), "n1"}, {at(110), "n2"}}
	p3 := Build(Input{Stream: stream, Lines: newer, After: &p1.Next, WindowFull: true})
	if got := strings.Join(messages(p3), "|"); got != "gap:window_exceeded|n1|n2" {
		t.Fatalf("a full window past the stop = %q", got)
	}
	p4 := Build(Input{Stream: stream, Lines: lines("a", "b", "cut-in-the-mid"), ReadLimited: true})
	if got := strings.Join(messages(p4), "|"); got != "a|b|gap:truncated" || !p4.Truncated || p4.Next.Time != at(10) {
		t.Fatalf("a read cut by its byte limit = %q (next %+v)", got, p4.Next)
	}
}

func TestBuildBoundsThePage(t *testing.T) {
	big := strings.Repeat("y ", MaxTextLineBytes/2-1)
	var in []RawLine
	for i := range MaxPageBytes/len(big) + 10 {
		in = append(in, RawLine{Time: at(i), Text: big})
	}
	p := Build(Input{Stream: stream, Lines: in})
	if !p.Truncated || p.Records[len(p.Records)-1].Reason != GapTruncated {
		t.Fatal("a page over MaxPageBytes must end with a truncated gap")
	}
	shown := len(p.Records) - 1
	if p.Next.Time != at(shown-1) {
		t.Fatalf("Next = %v, want the last line shown (%v)", p.Next.Time, at(shown-1))
	}
	rest := Build(Input{Stream: stream, Lines: in, After: &p.Next})
	if len(rest.Records) == 0 || rest.Records[0].Message != big {
		t.Fatal("the next page starts with the first line the page could not hold")
	}
	long := Build(Input{Stream: stream, Lines: []RawLine{{at(0), `{"level":"error","message":"` + strings.Repeat("z ", MaxMessageBytes/2+5) + `"}`}}})
	if r := long.Records[0]; !r.Truncated || len(r.Message) > MaxMessageBytes || !strings.HasSuffix(r.Message, truncationMark) {
		t.Fatalf("a long message is cut to MaxMessageBytes with a mark: %d bytes", len(r.Message))
	}
}

func TestBuildLevelFloor(t *testing.T) {
	in := lines(`{"level":"debug","subsystem":"s","message":"d"}`, `{"level":"info","subsystem":"s","message":"i"}`,
		`{"level":"warn","subsystem":"s","message":"w"}`, "plain", `{"level":"error","subsystem":"s","message":"e"}`)
	if got := strings.Join(messages(Build(Input{Stream: stream, Lines: in, MinLevel: LevelWarn})), "|"); got != "w|plain|e" {
		t.Fatalf("warn floor = %q", got)
	}
	if !ValidLevel("debug") || ValidLevel("unknown") || ValidLevel("") {
		t.Fatal("ValidLevel")
	}
}
