package auth

import (
	"net/http"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/testkit/testclock"
)

func TestSignInLimiterBudget(t *testing.T) {
	t.Parallel()
	clock := testclock.New(time.Unix(1_800_000_000, 0))
	l := NewSignInLimiter(clock.Now)
	for i := 0; i < 10; i++ {
		a, _, ok := l.Acquire("a@example.com")
		if !ok {
			t.Fatalf("attempt %d refused", i+1)
		}
		a.Fail()
		clock.Advance(time.Second)
	}
	_, retry, ok := l.Acquire("a@example.com")
	if ok || retry != 50*time.Second {
		t.Fatalf("11th: ok=%v retry=%v", ok, retry)
	}
	if _, _, ok := l.Acquire("b@example.com"); !ok {
		t.Fatal("another email is limited")
	}
	// The oldest failure leaves the window: one attempt again.
	clock.Advance(50 * time.Second)
	a, _, ok := l.Acquire("a@example.com")
	if !ok {
		t.Fatal("not released after the window")
	}
	a.Succeed() // clears the lane
	for i := 0; i < 10; i++ {
		a, _, ok := l.Acquire("a@example.com")
		if !ok {
			t.Fatalf("after success, attempt %d refused", i+1)
		}
		a.Fail()
	}
}

func TestSignInLimiterCountsInFlight(t *testing.T) {
	t.Parallel()
	l := NewSignInLimiter(nil)
	var held []*SignInAttempt
	for i := 0; i < 10; i++ {
		a, _, ok := l.Acquire("x@example.com")
		if !ok {
			t.Fatalf("attempt %d refused", i+1)
		}
		held = append(held, a)
	}
	if _, retry, ok := l.Acquire("x@example.com"); ok || retry < time.Second {
		t.Fatalf("parallel attempts overran the budget: retry %v", retry)
	}
	held[0].Release()
	held[0].Fail() // a second end is ignored
	if _, _, ok := l.Acquire("x@example.com"); !ok {
		t.Fatal("a released slot was not returned")
	}
}

func TestSignInLimiterCapacityKeepsSpentLanes(t *testing.T) {
	t.Parallel()
	clock := testclock.New(time.Unix(1_800_000_000, 0))
	l := NewSignInLimiter(clock.Now)
	l.Lanes = 2
	for _, email := range []string{"a@x.io", "b@x.io"} {
		a, _, _ := l.Acquire(email)
		a.Fail()
	}
	if _, _, ok := l.Acquire("c@x.io"); ok {
		t.Fatal("a new email evicted a spent lane")
	}
	clock.Advance(time.Minute)
	if _, _, ok := l.Acquire("c@x.io"); !ok {
		t.Fatal("expired lanes were not pruned")
	}
}

func TestCheckOrigin(t *testing.T) {
	t.Parallel()
	const trusted = "https://occ.example.com"
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Add(kv[i], kv[i+1])
		}
		return out
	}
	for _, tc := range []struct {
		rule OriginRule
		h    http.Header
		ok   bool
	}{
		{OriginCookieUnsafe, h("Origin", trusted), true},
		{OriginCookieUnsafe, h("Origin", trusted, "Sec-Fetch-Site", "same-origin"), true},
		{OriginCookieUnsafe, h("Origin", trusted, "Sec-Fetch-Site", "same-site"), false},
		{OriginCookieUnsafe, h(), false},
		{OriginCookieUnsafe, h("Origin", "https://evil.example"), false},
		{OriginCookieUnsafe, h("Origin", "null"), false},
		{OriginCookieUnsafe, h("Origin", trusted, "Origin", trusted), false},
		{OriginSignIn, h(), true},
		{OriginSignIn, h("Sec-Fetch-Site", "cross-site"), false},
		{OriginSignIn, h("Sec-Fetch-Site", "none"), true},
		{OriginSignIn, h("Origin", trusted), true},
		{OriginSignIn, h("Origin", "https://evil.example"), false},
		{OriginBrowserRead, h("Sec-Fetch-Site", "same-origin"), true},
		{OriginBrowserRead, h("Origin", trusted), true},
		{OriginBrowserRead, h("Origin", trusted, "Sec-Fetch-Site", "same-origin"), true},
		{OriginBrowserRead, h(), false},
		{OriginBrowserRead, h("Sec-Fetch-Site", "cross-site"), false},
		{OriginBrowserRead, h("Sec-Fetch-Site", "same-site"), false},
		{OriginBrowserRead, h("Sec-Fetch-Site", "none"), false},
		{OriginBrowserRead, h("Origin", "https://evil.example", "Sec-Fetch-Site", "same-origin"), false},
		{OriginBrowserRead, h("Origin", trusted, "Sec-Fetch-Site", "cross-site"), false},
		{OriginBrowserRead, h("Sec-Fetch-Site", "same-origin", "Sec-Fetch-Site", "same-origin"), false},
		{OriginBrowserRead, h("Origin", trusted, "Origin", "https://evil.example"), false},
		{OriginBrowserRead, h("Origin", trusted, "Sec-Fetch-Site", "same-origin", "Sec-Fetch-Site", "cross-site"), false},
	} {
		if err := CheckOrigin(tc.h, trusted, tc.rule); (err == nil) != tc.ok {
			t.Errorf("%v %v: %v", tc.rule, tc.h, err)
		}
	}
}

func TestSessionPrimitives(t *testing.T) {
	t.Parallel()
	token, hash, err := NewSessionToken()
	if err != nil || !wellFormedToken(token) || string(HashToken(token)) != string(hash) {
		t.Fatalf("token %q %v", token, err)
	}
	k1 := SessionKey([]byte("secret-one-secret-one-secret-one!"), "ses_1")
	if !wellFormedToken(k1) || k1 == SessionKey([]byte("secret-two-secret-two-secret-two!"), "ses_1") ||
		k1 == SessionKey([]byte("secret-one-secret-one-secret-one!"), "ses_2") {
		t.Fatal("session keys are not keyed by secret and session")
	}
	secure := Cookies{Secure: true}.Session(token, SessionLifetime)
	if secure.Name != "__Secure-openclaw_occ.session_token" || !secure.Secure || !secure.HttpOnly || secure.SameSite != http.SameSiteLaxMode || secure.MaxAge != 28800 {
		t.Fatalf("secure cookie %+v", secure)
	}
	if c := (Cookies{}).Clear(); c.Name != CookieName || c.MaxAge >= 0 {
		t.Fatalf("clear %+v", c)
	}
}
