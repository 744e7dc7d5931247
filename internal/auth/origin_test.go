package auth

import (
	"net/http"
	"testing"
)

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
