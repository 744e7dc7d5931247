package auth

import (
	"bytes"
	"strings"
	"testing"
)

func TestPasswordHashRoundTrip(t *testing.T) {
	t.Parallel()
	hash, err := HashPassword("correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(hash, "$argon2id$v=19$") || strings.Contains(hash, "staple") {
		t.Fatalf("hash %q", hash)
	}
	if ok, err := VerifyPassword(hash, "correct horse battery staple"); !ok || err != nil {
		t.Fatalf("verify: %v %v", ok, err)
	}
	if ok, _ := VerifyPassword(hash, "correct horse battery stapl"); ok {
		t.Fatal("wrong password accepted")
	}
	other, _ := HashPassword("correct horse battery staple")
	if other == hash {
		t.Fatal("salt not random")
	}
	for _, bad := range []string{"", "$argon2i$v=19$m=1,t=1,p=1$AAAA$AAAA", "$argon2id$v=19$m=0,t=1,p=1$AAAA$AAAA", "$argon2id$v=19$m=1,t=1,p=1$!!$AAAA"} {
		if _, err := VerifyPassword(bad, "x"); err == nil {
			t.Errorf("accepted malformed hash %q", bad)
		}
	}
}

func TestServiceKey(t *testing.T) {
	t.Parallel()
	k, err := NewServiceKey()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(k.Plaintext, ServiceKeyPrefix) || len(k.Plaintext) != len(ServiceKeyPrefix)+43 {
		t.Fatalf("key %q", k.Plaintext)
	}
	if !bytes.Equal(HashServiceKey(k.Plaintext), k.Hash) || !strings.HasPrefix(k.Plaintext, k.Start) {
		t.Fatal("hash or start mismatch")
	}
	k2, _ := NewServiceKey()
	if k2.Plaintext == k.Plaintext {
		t.Fatal("keys repeat")
	}
}

// BenchmarkVerifyPassword is the hash every password sign-in runs, the anchor for the cost of the
// sign-in budgets (store's BenchmarkSignInLanes).
func BenchmarkVerifyPassword(b *testing.B) {
	hash, err := HashPassword("correct horse battery staple")
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		if ok, err := VerifyPassword(hash, "correct horse battery staple"); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
