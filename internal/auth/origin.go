package auth

import (
	"errors"
	"net/http"
)

// OriginRule selects one of the browser request-forgery gates that cookie-authenticated requests
// pass.
type OriginRule int

const (
	// OriginCookieUnsafe is the gate of every unsafe (non-GET/HEAD) cookie-authenticated request:
	// the Origin header must be present and equal the trusted origin, and Sec-Fetch-Site, when
	// present, must be same-origin.
	OriginCookieUnsafe OriginRule = iota
	// OriginSignIn is the gate of password sign-in and sign-out: an explicit Origin must equal the
	// trusted origin; without Origin, Sec-Fetch-Site: cross-site is refused; a request with neither
	// (a CLI, curl) passes.
	OriginSignIn
	// OriginBrowserRead is the gate of the GET routes that need the exact Origin (the account
	// reads): an Origin, when sent, must equal the trusted origin and Sec-Fetch-Site, when present,
	// be same-origin. A browser's same-origin GET carries no Origin, so without one the request
	// passes only with Sec-Fetch-Site: same-origin, a header pages cannot set.
	OriginBrowserRead
)

// ErrOriginRefused is returned when a request fails its Origin gate (403).
var ErrOriginRefused = errors.New("auth: the request origin is not trusted")

// CheckOrigin applies rule to the request headers; trusted is the normalized origin of
// OCC_AUTH_BASE_URL.
func CheckOrigin(h http.Header, trusted string, rule OriginRule) error {
	origins := h.Values("Origin")
	sites := h.Values("Sec-Fetch-Site")
	if len(origins) > 1 || len(sites) > 1 {
		return ErrOriginRefused
	}
	switch rule {
	case OriginSignIn:
		if len(origins) == 1 {
			if origins[0] != trusted {
				return ErrOriginRefused
			}
			return nil
		}
		if len(sites) == 1 && sites[0] == "cross-site" {
			return ErrOriginRefused
		}
		return nil
	case OriginBrowserRead:
		if len(origins) == 0 {
			if len(sites) != 1 || sites[0] != "same-origin" {
				return ErrOriginRefused
			}
			return nil
		}
		if len(origins) != 1 || origins[0] != trusted || len(sites) > 1 || (len(sites) == 1 && sites[0] != "same-origin") {
			return ErrOriginRefused
		}
		return nil
	default:
		if len(origins) != 1 || origins[0] != trusted {
			return ErrOriginRefused
		}
		if len(sites) == 1 && sites[0] != "same-origin" {
			return ErrOriginRefused
		}
		return nil
	}
}

// SafeMethod reports whether method cannot change state (no Origin gate applies).
func SafeMethod(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}
