package api_test

import (
	"context"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/openclaw/occ/internal/api"
	"github.com/openclaw/occ/internal/settings"
)

// TestSignInBudgetsAreSharedAndKeyedByClient: a client that spends an account's sign-in budget
// locks out only itself (the owner signs in from another address), and the budget lives in
// PostgreSQL, so two API replicas spend one budget. Client addresses come through a trusted proxy.
func TestSignInBudgetsAreSharedAndKeyedByClient(t *testing.T) {
	t.Parallel()
	var cfg *api.Config
	e := newEnv(t, func(_ *env, c *api.Config) {
		c.SignIn.TrustedProxy = &settings.TrustedProxy{CIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Header: "x-forwarded-for"}
		cfg = c
	})
	second, err := api.New(context.Background(), *cfg)
	if err != nil {
		t.Fatal(err)
	}
	replica := httptest.NewServer(second)
	t.Cleanup(replica.Close)

	from := func(base, addr, password string) resp {
		r := signInReq(adminEmail, password)
		r.header = map[string]string{"X-Forwarded-For": addr}
		return doHTTP(t, base, r)
	}
	// The attacker fails ten times, alternating replicas; the eleventh try is refused on either.
	for i := range 10 {
		base := e.http.URL
		if i%2 == 1 {
			base = replica.URL
		}
		if r := from(base, "203.0.113.7", "wrong-password-guess"); r.status != 401 {
			t.Fatalf("guess %d: %d %s", i+1, r.status, r.raw)
		}
	}
	for _, base := range []string{e.http.URL, replica.URL} {
		if r := from(base, "203.0.113.7", adminPass); r.status != 429 || r.header.Get("Retry-After") == "" {
			t.Fatalf("attacker's 11th attempt: %d %s", r.status, r.raw)
		}
	}
	// The owner, elsewhere, is not locked out.
	if r := from(replica.URL, "198.51.100.9", adminPass); r.status != 200 {
		t.Fatalf("owner from another address: %d %s", r.status, r.raw)
	}
	if n := e.count(`SELECT count(*) FROM occ.sign_in_lanes`); n == 0 {
		t.Fatal("no sign-in lane in PostgreSQL")
	}
}
