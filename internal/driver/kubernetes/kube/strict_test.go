package kube

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/testkit/kubetest"
)

// Create, Update and MergePatch ask the real API server for strict field validation: a field the
// schema does not know is refused and nothing is written. Without the parameter the server keeps
// the object and drops the field, which is what the control case shows.
func TestWritesRefuseUnknownFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster := kubetest.Start(t, kubetest.Options{NoControllerManager: true, NoKubelet: true})
	c, err := New(Options{FieldManager: "occ-test", Auth: Auth{Mode: ModeTokenFile, Server: cluster.URL,
		TokenPath: cluster.WriteTokenFile(t, kubetest.Admin), CAPath: cluster.CAFile}})
	if err != nil {
		t.Fatal(err)
	}
	ns := "strict-" + uuid.NewString()[:8]
	if err := c.Create(ctx, Namespaces.Path("", ""), Object{"apiVersion": "v1", "kind": "Namespace",
		"metadata": Object{"name": ns}}, nil); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	configMap := func(name string, extra Object) Object {
		o := Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": Object{"name": name, "namespace": ns},
			"data": Object{"k": "v"}}
		for k, v := range extra {
			o[k] = v
		}
		return o
	}
	// A body that does not decode strictly is 400; a merge patch is decoded after it is applied, so
	// the server answers 422 for the object it would produce. Either way the field is named.
	refused := func(what string, want int, err error) {
		t.Helper()
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != want || !strings.Contains(ae.Message, `unknown field "bogus"`) {
			t.Fatalf("%s: want %d naming the unknown field, got %v (%+v)", what, want, err, ae)
		}
	}
	bogus := Object{"bogus": "x"}
	collection := ConfigMaps.Path(ns, "")

	refused("create", http.StatusBadRequest, c.Create(ctx, collection, configMap("refused", bogus), nil))
	if err := c.Get(ctx, ConfigMaps.Path(ns, "refused"), nil); !IsNotFound(err) {
		t.Fatalf("a refused create wrote the object: %v", err)
	}

	var created Object
	if err := c.Create(ctx, collection, configMap("kept", nil), &created); err != nil {
		t.Fatalf("create: %v", err)
	}
	update := configMap("kept", bogus)
	update["metadata"].(Object)["resourceVersion"] = created["metadata"].(map[string]any)["resourceVersion"]
	refused("update", http.StatusBadRequest, c.Update(ctx, ConfigMaps.Path(ns, "kept"), update, nil))
	refused("merge patch", http.StatusUnprocessableEntity, c.MergePatch(ctx, ConfigMaps.Path(ns, "kept"), Object{"bogus": "x", "data": Object{"k": "w"}}, nil))
	var after Object
	if err := c.Get(ctx, ConfigMaps.Path(ns, "kept"), &after); err != nil || after["data"].(map[string]any)["k"] != "v" {
		t.Fatalf("a refused write changed the object: %v %v", after, err)
	}
	if err := c.MergePatch(ctx, ConfigMaps.Path(ns, "kept"), Object{"data": Object{"k": "w"}}, nil); err != nil {
		t.Fatalf("a valid merge patch: %v", err)
	}

	// Control: the same create without fieldValidation=Strict is accepted (the field is dropped).
	lax := url.Values{"fieldManager": {"occ-test"}}
	if err := c.write(ctx, http.MethodPost, collection, lax, "application/json", configMap("lax", bogus), nil); err != nil {
		t.Fatalf("control: the server refused an unknown field without strict validation: %v", err)
	}
}
