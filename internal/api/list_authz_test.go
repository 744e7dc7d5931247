package api_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/openclaw/occ/internal/iam"
)

// TestListFiltersWithExactGrants: a caller with read on single Service Accounts (and a Restriction
// on one of them) lists, over more candidates than one fetch batch and in small pages, exactly the
// accounts it may read, in list order; an unrestricted administrator sees them all.
func TestListFiltersWithExactGrants(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.readyNamespace("lists")
	base := "/namespaces/" + ns + "/service-accounts"
	for i := range 230 {
		e.expect(e.admin("POST", base, map[string]any{"name": fmt.Sprintf("sa-%03d", i)}), 201)
	}
	var all []string
	for _, item := range e.expect(e.admin("GET", base, nil), 200).list() {
		all = append(all, item.(map[string]any)["id"].(string))
	}
	if len(all) != 230 {
		t.Fatalf("admin lists %d accounts", len(all))
	}

	caller := e.newServicePrincipal("")
	e.grant(caller.id, ns, iam.KindNamespace, ns, perm(iam.ActionRead, iam.KindNamespace))
	var want []string
	for i, id := range all {
		if i%3 != 0 {
			continue
		}
		e.grant(caller.id, ns, iam.KindServiceAccount, id, perm(iam.ActionRead, iam.KindServiceAccount))
		if i == 201 {
			e.exec(`INSERT INTO occ.iam_restrictions (id, namespace_id, action, resource_kind, resource_id)
			  VALUES ('x-list', $1, 'read', 'service_account', $2)`, ns, id)
			continue
		}
		want = append(want, id)
	}
	// A grant on an account of the same id in another Namespace does not leak into this one.
	other := e.readyNamespace("other")
	e.grant(caller.id, other, iam.KindServiceAccount, all[1], perm(iam.ActionRead, iam.KindServiceAccount))

	var got []string
	cursor := ""
	for pages := 0; pages < 100; pages++ {
		p := base + "?limit=7"
		if cursor != "" {
			p += "&cursor=" + cursor
		}
		r := e.expect(e.do(caller.apply(req{method: "GET", path: p})), 200)
		if len(r.list()) > 7 {
			t.Fatalf("page of %d", len(r.list()))
		}
		for _, item := range r.list() {
			got = append(got, item.(map[string]any)["id"].(string))
		}
		next, _ := r.doc["meta"].(map[string]any)["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged list of %d, want %d:\n got %v\nwant %v", len(got), len(want), got, want)
	}
	var whole []string
	for _, item := range e.expect(e.do(caller.apply(req{method: "GET", path: base})), 200).list() {
		whole = append(whole, item.(map[string]any)["id"].(string))
	}
	if !slices.Equal(whole, want) {
		t.Fatalf("complete list of %d, want %d", len(whole), len(want))
	}
}
