package auth

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/openclaw/occ/internal/settings"
)

func TestClientAddress(t *testing.T) {
	t.Parallel()
	proxy := &settings.TrustedProxy{CIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, Header: "x-forwarded-for"}
	for _, tc := range []struct {
		name, remote, forwarded, want string
		trusted                       bool
		proxy                         *settings.TrustedProxy
	}{
		{"no proxy configured", "10.1.1.1:5000", "203.0.113.9", "10.1.1.1", false, nil},
		{"untrusted peer", "192.0.2.1:5000", "203.0.113.9", "192.0.2.1", false, proxy},
		{"trusted peer", "10.1.1.1:5000", "203.0.113.9", "203.0.113.9", true, proxy},
		{"chain skips trusted hops", "10.1.1.1:5000", "198.51.100.4, 203.0.113.9, 10.2.2.2", "203.0.113.9", true, proxy},
		{"spoofed left part is ignored", "10.1.1.1:5000", "1.2.3.4, 203.0.113.9", "203.0.113.9", true, proxy},
		{"malformed falls back", "10.1.1.1:5000", "203.0.113.9, garbage", "10.1.1.1", false, proxy},
		{"mapped ipv4", "[::ffff:10.1.1.1]:5000", "::ffff:203.0.113.9", "203.0.113.9", true, proxy},
		{"all trusted", "10.1.1.1:5000", "10.3.3.3", "10.1.1.1", false, proxy},
	} {
		r := &http.Request{RemoteAddr: tc.remote, Header: http.Header{}}
		r.Header.Set("X-Forwarded-For", tc.forwarded)
		got, trusted := ClientAddress(tc.proxy, r)
		if got != tc.want || trusted != tc.trusted {
			t.Errorf("%s: %s %v, want %s %v", tc.name, got, trusted, tc.want, tc.trusted)
		}
	}
}

func TestUserCodes(t *testing.T) {
	t.Parallel()
	code, err := NewUserCode()
	if err != nil || len(code) != 9 || code[4] != '-' {
		t.Fatalf("%q %v", code, err)
	}
	if n, ok := NormalizeUserCode(" " + code[:4] + " " + code[5:]); !ok || n != code[:4]+code[5:] {
		t.Fatalf("normalize %q %v", n, ok)
	}
	for _, bad := range []string{"AEIO-UAEI", "BCDF", "BCDF-GHJK-LMNP", "bcdf-ghj1"} {
		if _, ok := NormalizeUserCode(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
	token, hash, err := NewCLIToken()
	if err != nil || !WellFormedCLIToken(token) || string(HashToken(token)) != string(hash) {
		t.Fatalf("%q %v", token, err)
	}
}
