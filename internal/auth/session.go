package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"regexp"
	"time"

	"github.com/google/uuid"
)

// Browser session rules.
const (
	// SessionLifetime is the absolute lifetime of a session: no refresh, no renewal.
	SessionLifetime = 8 * time.Hour
	// CookieName is the session cookie on an http:// base URL.
	CookieName = "openclaw_occ.session_token"
	// SecureCookieName is the session cookie on an https:// base URL (sent with Secure).
	SecureCookieName = "__Secure-" + CookieName
	// SessionKeyHeader optionally names which session a browser means (HMAC of the session id).
	SessionKeyHeader = "x-occ-session-key"
	// APIKeyHeader carries a service key.
	APIKeyHeader = "x-api-key"
)

// tokenPattern is the shape of session tokens and session keys: 32 bytes, base64url, no padding.
var tokenPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// NewSessionID returns a new opaque session id.
func NewSessionID() string { return "ses_" + uuid.NewString() }

// NewSessionToken returns a fresh session token (shown to the browser only, in the cookie) and the
// SHA-256 hash that is stored.
func NewSessionToken() (token string, hash []byte, err error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", nil, err
	}
	token = base64.RawURLEncoding.EncodeToString(raw)
	return token, HashToken(token), nil
}

// HashToken is the stored form of a session token. Tokens carry 256 bits of entropy, so a plain
// SHA-256 suffices.
func HashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// wellFormedToken reports whether s has the shape of a token this package issues.
func wellFormedToken(s string) bool { return tokenPattern.MatchString(s) }

// WellFormedToken reports whether s has the shape of a token, session key or attempt id this
// package issues (32 bytes, base64url).
func WellFormedToken(s string) bool { return wellFormedToken(s) }

// NewSecret returns 32 random bytes, base64url (43 characters): states, browser bindings, PKCE
// verifiers, receipts and device codes.
func NewSecret() (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(raw), nil
}

// Keyed is HMAC-SHA256(secret, purpose, value), base64url: a value derived from a one-time secret
// that only this Installation can compute (sign-in attempt ids, OpenID nonces).
func Keyed(secret []byte, purpose, value string) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(purpose))
	mac.Write([]byte{0})
	mac.Write([]byte(value))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// SessionKey is the non-credential handle of a session a browser may echo in x-occ-session-key:
// HMAC-SHA256(auth secret, session id), base64url. It is stable for a session and useless without
// the cookie.
func SessionKey(secret []byte, sessionID string) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(sessionID))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func sessionKeyMatches(secret []byte, sessionID, presented string) bool {
	want := SessionKey(secret, sessionID)
	return subtle.ConstantTimeCompare([]byte(want), []byte(presented)) == 1
}

// HostCookieName is the session cookie on an https:// base URL once external sign-in is
// configured: __Host- forbids a Domain attribute, so a sibling host cannot plant it.
const HostCookieName = "__Host-" + CookieName

// SharedCookieName is the session cookie scoped to OCC_AUTH_COOKIE_DOMAIN (native admin).
const SharedCookieName = "__Secure-openclaw_occ_shared.session_token"

// Cookies issues and clears the session cookie of one API origin.
type Cookies struct {
	// Secure is true for an https:// base URL: the cookie is __Secure- prefixed and Secure.
	Secure bool
	// HostOnly (with Secure) names the cookie __Host-: external sign-in is configured.
	HostOnly bool
	// Domain, when set, scopes the cookie to this parent domain (native admin shared cookie).
	Domain string
}

// Name is the session cookie's name.
func (c Cookies) Name() string {
	switch {
	case c.Domain != "":
		return SharedCookieName
	case c.Secure && c.HostOnly:
		return HostCookieName
	case c.Secure:
		return SecureCookieName
	}
	return CookieName
}

// Secured is a cookie named for this origin's security: __Host-name on https, name on http. It
// carries the attributes every cookie of ours has: Path=/, HttpOnly, Secure on https.
func (c Cookies) Secured(name, value string, maxAge int, sameSite http.SameSite) *http.Cookie {
	if c.Secure {
		name = "__Host-" + name
	}
	return &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true, Secure: c.Secure, SameSite: sameSite}
}

// SecuredName is the name Secured gives name.
func (c Cookies) SecuredName(name string) string {
	if c.Secure {
		return "__Host-" + name
	}
	return name
}

// Session returns the Set-Cookie of a new session: HttpOnly, SameSite=Lax, Path=/, Secure on
// HTTPS, expiring with the session.
func (c Cookies) Session(token string, lifetime time.Duration) *http.Cookie {
	return &http.Cookie{
		Name: c.Name(), Value: token, Path: "/", MaxAge: int(lifetime / time.Second), Domain: c.Domain,
		HttpOnly: true, Secure: c.Secure, SameSite: http.SameSiteLaxMode,
	}
}

// Clear returns the Set-Cookie that removes the session cookie.
func (c Cookies) Clear() *http.Cookie {
	return &http.Cookie{
		Name: c.Name(), Value: "", Path: "/", MaxAge: -1, Domain: c.Domain,
		HttpOnly: true, Secure: c.Secure, SameSite: http.SameSiteLaxMode,
	}
}
