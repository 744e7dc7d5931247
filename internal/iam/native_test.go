package iam

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestAuthorizeReturnsStorageError(t *testing.T) {
	t.Parallel()
	storageErr := errors.New("connection refused")
	n := NewNative(driverID, &memSource{err: storageErr})
	d, err := n.Authorize(context.Background(), adminReadsAgent)
	if !errors.Is(err, storageErr) {
		t.Fatalf("err = %v, want the storage error", err)
	}
	if d.Allowed || Allows(d, driverID) {
		t.Fatalf("decision on storage failure must not allow: %+v", d)
	}

	d, err = NewNative(driverID, nil).Authorize(context.Background(), adminReadsAgent)
	if err == nil || d.Allowed {
		t.Fatalf("no source: got %+v, %v", d, err)
	}
}

func TestAuthorizeReadsFreshEveryCall(t *testing.T) {
	t.Parallel()
	src := &memSource{all: basePolicy()}
	n := NewNative(driverID, src)
	if d, _ := n.Authorize(context.Background(), adminReadsAgent); !d.Allowed {
		t.Fatalf("before: %+v", d)
	}
	src.all.Bindings = src.all.Bindings[1:] // drop binding_admin
	if d, _ := n.Authorize(context.Background(), adminReadsAgent); d.Allowed || d.Reason != ReasonNoBinding {
		t.Fatalf("after revocation: %+v", d)
	}
}

func TestLookupIdentity(t *testing.T) {
	t.Parallel()
	policy := basePolicy()
	policy.Identities = append(policy.Identities,
		// A second row for one (issuer, subject): only a corrupted store has it.
		Identity{ID: "prn_twin1", Kind: IdentityKindPrincipal, Issuer: issuer, Subject: "u_twin"},
		Identity{ID: "prn_twin2", Kind: IdentityKindPrincipal, Issuer: issuer, Subject: "u_twin"},
		Identity{ID: "prn_broken", Kind: IdentityKindPrincipal, Issuer: issuer, Subject: "u_broken", NamespaceID: ptr(nsA)},
	)
	n := NewNative(driverID, &memSource{all: policy})
	byID := func(id string) *Identity {
		for i := range policy.Identities {
			if policy.Identities[i].ID == id {
				return &policy.Identities[i]
			}
		}
		return nil
	}
	cases := []struct {
		name    string
		q       IdentityLookup
		want    *Identity
		wantErr error
	}{
		{name: "principal by issuer and subject", q: IdentityLookup{Issuer: issuer, Subject: "u_alice"}, want: byID("prn_alice")},
		{name: "principal with a pinned namespace", q: IdentityLookup{Issuer: issuer, Subject: "u_alice", NamespaceID: ptr(nsA)}, want: byID("prn_alice")},
		{name: "unknown subject", q: IdentityLookup{Issuer: issuer, Subject: "u_nobody"}},
		{name: "other issuer", q: IdentityLookup{Issuer: "occ:installation:other:better-auth", Subject: "u_alice"}},
		{name: "installation service principal", q: IdentityLookup{ServicePrincipalID: "spn_svc"}, want: byID("spn_svc")},
		{name: "installation service principal with a namespace scope", q: IdentityLookup{ServicePrincipalID: "spn_svc", NamespaceID: ptr(nsB)}, want: byID("spn_svc")},
		{name: "namespace service principal in its namespace", q: IdentityLookup{ServicePrincipalID: "spn_a", NamespaceID: ptr(nsA)}, want: byID("spn_a")},
		{name: "namespace service principal in another namespace", q: IdentityLookup{ServicePrincipalID: "spn_a", NamespaceID: ptr(nsB)}},
		{name: "namespace service principal without namespace", q: IdentityLookup{ServicePrincipalID: "spn_a"}},
		{name: "a principal id is not a service principal", q: IdentityLookup{ServicePrincipalID: "prn_admin"}},
		{name: "ambiguous", q: IdentityLookup{Issuer: issuer, Subject: "u_twin"}, wantErr: ErrAmbiguousIdentity},
		{name: "structurally invalid row", q: IdentityLookup{Issuer: issuer, Subject: "u_broken", NamespaceID: ptr(nsA)}, wantErr: ErrPolicyInvalid},
		{name: "both forms", q: IdentityLookup{Issuer: issuer, Subject: "u_alice", ServicePrincipalID: "spn_svc"}, wantErr: ErrInvalidLookup},
		{name: "neither form", q: IdentityLookup{NamespaceID: ptr(nsA)}, wantErr: ErrInvalidLookup},
		{name: "issuer without subject", q: IdentityLookup{Issuer: issuer}, wantErr: ErrInvalidLookup},
		{name: "subject without issuer", q: IdentityLookup{Subject: "u_alice"}, wantErr: ErrInvalidLookup},
		{name: "empty namespace", q: IdentityLookup{ServicePrincipalID: "spn_svc", NamespaceID: ptr("")}, wantErr: ErrInvalidLookup},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := n.LookupIdentity(context.Background(), tc.q)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("identity = %+v, want %+v", got, tc.want)
			}
		})
	}

	storageErr := errors.New("connection refused")
	got, err := NewNative(driverID, &memSource{err: storageErr}).LookupIdentity(context.Background(), IdentityLookup{ServicePrincipalID: "spn_svc"})
	if got != nil || !errors.Is(err, storageErr) {
		t.Fatalf("storage failure: got %+v, %v", got, err)
	}
}

func TestValidateNativeConfiguration(t *testing.T) {
	t.Parallel()
	if err := ValidateNativeConfiguration(map[string]any{}); err != nil {
		t.Fatalf("empty object: %v", err)
	}
	var cerr *ConfigurationError
	if err := ValidateNativeConfiguration(nil); !errors.As(err, &cerr) || !reflect.DeepEqual(cerr.Paths(), []string{""}) {
		t.Fatalf("nil: %v", err)
	}
	err := ValidateNativeConfiguration(map[string]any{"cache": "secret-value", "a/b~c": 1})
	if !errors.As(err, &cerr) || !reflect.DeepEqual(cerr.Paths(), []string{"/a~1b~0c", "/cache"}) {
		t.Fatalf("fields: %v", err)
	}
	if msg := err.Error(); strings.Contains(msg, "secret-value") {
		t.Fatalf("error leaks a submitted value: %s", msg)
	}
	if NewNative("native-iam", nil).ID() != "native-iam" {
		t.Fatal("ID")
	}
}

func TestAuthorizeEachInMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := &memSource{all: basePolicy()}
	n := NewNative(driverID, src)
	var resources []Resource
	for _, kind := range []string{KindAgent, KindSecret, KindConfiguration} {
		for _, id := range []string{"agt_1", "agt_2", "agt_9", "cfg_1"} {
			for _, ns := range []*string{ptr(nsA), ptr(nsB)} {
				resources = append(resources, Resource{Kind: kind, ID: id, NamespaceID: ns})
			}
		}
	}
	for _, principal := range []string{"prn_admin", "spn_svc", "prn_alice", "prn_bob", "prn_carol", "prn_dave", "spn_a", "prn_nobody"} {
		for _, action := range []string{ActionRead, ActionDelete, ActionDeploy} {
			before := src.batchCalls
			got, err := n.AuthorizeEach(ctx, principal, action, resources)
			if err != nil || len(got) != len(resources) {
				t.Fatalf("%d decisions, %v", len(got), err)
			}
			if src.batchCalls != before+1 {
				t.Fatalf("%d policy reads for one batch", src.batchCalls-before)
			}
			for i, res := range resources {
				want, err := n.Authorize(ctx, Request{PrincipalID: principal, Action: action, Resource: res})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got[i], want) {
					t.Fatalf("%s %s %+v: AuthorizeEach %+v, Authorize %+v", principal, action, res, got[i], want)
				}
			}
		}
	}

	storageErr := errors.New("connection refused")
	got, err := NewNative(driverID, &memSource{err: storageErr}).AuthorizeEach(ctx, "prn_admin", ActionRead, resources[:2])
	if !errors.Is(err, storageErr) || len(got) != 2 || got[0].Allowed || got[1].Allowed {
		t.Fatalf("storage failure: %+v %v", got, err)
	}
	if got, err := NewNative(driverID, nil).AuthorizeEach(ctx, "prn_admin", ActionRead, resources[:1]); err == nil || got[0].Allowed {
		t.Fatalf("no source: %+v %v", got, err)
	}
}

// TestNarrowToKeepsMatchingRows checks the split of a batch load against the algorithm itself: on a
// valid slice, deciding over the rows narrowTo keeps for a resource gives the decision over the
// whole slice, so narrowTo never drops a binding, Role or Restriction that can match.
func TestNarrowToKeepsMatchingRows(t *testing.T) {
	t.Parallel()
	src := &memSource{all: basePolicy()}
	for _, principal := range []string{"prn_admin", "spn_svc", "prn_alice", "prn_bob", "prn_carol", "prn_dave", "spn_a", "spn_agent"} {
		for _, action := range []string{ActionRead, ActionDelete, ActionDeploy, ActionOperate} {
			for _, kind := range []string{KindAgent, KindSecret, KindConfiguration, KindNamespace, KindInstallation} {
				for _, ns := range []*string{nil, ptr(nsA), ptr(nsB)} {
					for _, id := range []string{"agt_1", "agt_9", nsA} {
						res := Resource{Kind: kind, ID: id, NamespaceID: ns}
						full, _ := src.DecisionPolicy(context.Background(), principal, action, res)
						if ValidateSlice(full) != nil {
							t.Fatalf("base policy slice of %s is invalid", principal)
						}
						r := Request{PrincipalID: principal, Action: action, Resource: res}
						if got, want := Decide(narrowTo(full, action, res), r, driverID), Decide(full, r, driverID); !reflect.DeepEqual(got, want) {
							t.Fatalf("%+v: narrowed %+v, whole %+v", r, got, want)
						}
					}
				}
			}
		}
	}
}
