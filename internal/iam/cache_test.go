package iam

import "testing"

func TestDecisionCacheKeepsOneEpoch(t *testing.T) {
	ns := "ns-1"
	read := Request{PrincipalID: "p", Action: "read", Resource: Resource{Kind: KindNamespace, ID: ns, NamespaceID: &ns}}
	outside := read
	outside.Resource.NamespaceID = nil
	allow := Decision{Allowed: true, Reason: "allowed"}
	c := NewDecisionCache(2)

	c.put(5, read, allow)
	if d, ok := c.get(5, read); !ok || !d.Allowed {
		t.Fatal("a decision of the current epoch was not kept")
	}
	if _, ok := c.get(5, outside); ok {
		t.Fatal("a request outside the Namespace found the decision of one inside it")
	}
	if _, ok := c.get(6, read); ok {
		t.Fatal("a newer epoch found an older decision")
	}
	if _, ok := c.get(4, read); ok {
		t.Fatal("an older epoch found a newer decision")
	}
	// A request that read an older epoch must not put its decision over a newer epoch's.
	c.put(6, outside, Decision{Reason: "denied"})
	c.put(5, read, allow)
	if _, ok := c.get(5, read); ok {
		t.Fatal("an older epoch's decision came back")
	}
	if d, ok := c.get(6, outside); !ok || d.Reason != "denied" {
		t.Fatal("the newer epoch's decision was lost")
	}
	// Full: starts over rather than growing.
	c.put(6, read, allow)
	other := read
	other.PrincipalID = "q"
	c.put(6, other, allow)
	if len(c.decisions) > 2 {
		t.Fatalf("%d decisions kept, limit 2", len(c.decisions))
	}
	if _, ok := c.get(6, other); !ok {
		t.Fatal("the decision put into a full cache was dropped")
	}
}
