package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/testkit/kubetest"
)

// Helpers shared by the storage driver tests (configmaps_test.go, secrets_test.go). Named
// storage* so they do not collide with the Compute tests' helpers.

// storageAuth is a storage driver configuration authenticating as identity with a token file.
func storageAuth(t *testing.T, c *kubetest.Cluster, identity string) map[string]any {
	t.Helper()
	return map[string]any{"authentication": map[string]any{
		"mode": "tokenFile", "server": c.URL, "tokenPath": c.WriteTokenFile(t, identity), "caPath": c.CAFile,
	}}
}

func storageNamespaceID() string { return "ns_" + uuid.NewString() }

// storageTenantNamespace creates, as admin, the tenant namespace of namespaceID the way the
// Compute Driver does (ownership labels, gateway-namespace label, namespace-id annotation) and
// deletes it when the test ends.
func storageTenantNamespace(t *testing.T, c *kubetest.Cluster, namespaceID string) string {
	t.Helper()
	name := managedNamespaceName(namespaceID)
	storageCreateNamespace(t, c, name, map[string]any{
		labelManagedBy: managedByValue, labelNamespace: namespaceID, labelGatewayNamespace: namespaceID,
	}, map[string]any{annotationNamespaceID: namespaceID})
	return name
}

func storageCreateNamespace(t *testing.T, c *kubetest.Cluster, name string, labels, annotations map[string]any) {
	t.Helper()
	_, err := c.Admin().Create(kubetest.CorePath("", "namespaces", ""), kubetest.Object{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": kubetest.Object{"name": name, "labels": labels, "annotations": annotations},
	})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() { _ = c.Admin().Delete(kubetest.CorePath("", "namespaces", name), nil) })
}

// storageMergePatch patches an object as admin.
func storageMergePatch(t *testing.T, c *kubetest.Cluster, path string, patch kubetest.Object) {
	t.Helper()
	if _, err := c.Admin().Patch(path, kubetest.MergePatch, patch); err != nil {
		t.Fatalf("patch %s: %v", path, err)
	}
}

func storageConfigurations(t *testing.T, c *kubetest.Cluster) *Configurations {
	t.Helper()
	d, err := NewConfigurations("config-kubernetes", storageAuth(t, c, kubetest.Worker), driver.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func storageDocument(namespaceID string) driver.ConfigurationDocument {
	return driver.ConfigurationDocument{
		ID: "cfg_" + uuid.NewString(), NamespaceID: namespaceID, Kind: driver.ConfigurationKindAgent, Generation: 1,
		Values:         json.RawMessage(`{"agents":{"defaults":{"model":"openai/gpt-5"}}}`),
		SecretBindings: json.RawMessage(`{"OPENAI_API_KEY":{"secretId":"sec_00000000-0000-4000-8000-000000000000"}}`),
		CreatedAt:      time.Date(2026, 11, 30, 8, 0, 0, 123456789, time.UTC),
	}
}

func storageSameDocument(a, b driver.ConfigurationDocument) bool {
	ja, _ := encodeConfiguration(a)
	jb, _ := encodeConfiguration(b)
	return string(ja) == string(jb)
}

func TestConfigurationsRoundTrip(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	ctx := context.Background()
	d := storageConfigurations(t, c)
	nsID := storageNamespaceID()
	nsName := storageTenantNamespace(t, c, nsID)
	doc := storageDocument(nsID)

	if _, err := d.Read(ctx, doc.Ref()); !errors.Is(err, driver.ErrConfigurationNotFound) {
		t.Fatalf("read before create: %v", err)
	}
	got, err := d.Create(ctx, doc)
	if err != nil || !storageSameDocument(got, doc) {
		t.Fatalf("create = %+v, %v", got, err)
	}
	got, err = d.Read(ctx, doc.Ref())
	if err != nil || !storageSameDocument(got, doc) || !got.CreatedAt.Equal(doc.CreatedAt) {
		t.Fatalf("read = %+v, %v", got, err)
	}

	// The stored object: name, ownership, the generation and exactly one data key.
	path := kubetest.CorePath(nsName, "configmaps", configurationConfigMapName(doc.ID))
	obj, err := c.Admin().Get(path)
	if err != nil {
		t.Fatal(err)
	}
	labels := obj["metadata"].(map[string]any)["labels"].(map[string]any)
	annotations := obj["metadata"].(map[string]any)["annotations"].(map[string]any)
	if labels[labelManagedBy] != managedByValue || labels[labelNamespace] != nsID || labels[labelConfiguration] != doc.ID {
		t.Fatalf("labels = %v", labels)
	}
	if annotations[annotationNamespaceID] != nsID || annotations[cfgAnnotationID] != doc.ID || annotations[cfgAnnotationKind] != "agent" ||
		annotations[cfgAnnotationGeneration] != "1" || annotations[cfgAnnotationCreatedAt] != "2026-11-30T08:00:00.123456789Z" {
		t.Fatalf("annotations = %v", annotations)
	}
	data := obj["data"].(map[string]any)
	if len(data) != 1 || !strings.Contains(data[configurationDataKey].(string), `"secretBindings"`) {
		t.Fatalf("data = %v", data)
	}

	// A retried create of the identical document succeeds; a different one is refused.
	if _, err := d.Create(ctx, doc); err != nil {
		t.Fatalf("identical create: %v", err)
	}
	other := doc
	other.Values = json.RawMessage(`{"other":true}`)
	if _, err := d.Create(ctx, other); driver.Code(err) != CodeOwnershipConflict {
		t.Fatalf("conflicting create: %v", err)
	}

	// Generations move by exactly one, also back (OCC's rollback); kind and creation time stay.
	for _, bad := range []func(*driver.ConfigurationDocument){
		func(x *driver.ConfigurationDocument) { x.Generation = 3 },
		func(x *driver.ConfigurationDocument) { x.Generation = 1 },
		func(x *driver.ConfigurationDocument) { x.Generation = 2; x.CreatedAt = x.CreatedAt.Add(time.Second) },
	} {
		x := doc
		bad(&x)
		if _, err := d.Update(ctx, x); driver.Code(err) != CodeConfigurationUpdateRefused {
			t.Fatalf("update accepted or wrong error: %+v: %v", x, err)
		}
	}
	doc.Generation, doc.Values = 2, json.RawMessage(`{"agents":{"defaults":{"model":"openai/gpt-5.1"}}}`)
	if got, err := d.Update(ctx, doc); err != nil || !storageSameDocument(got, doc) {
		t.Fatalf("update = %+v, %v", got, err)
	}
	if got, err := d.Read(ctx, doc.Ref()); err != nil || got.Generation != 2 || string(got.Values) != string(doc.Values) {
		t.Fatalf("read after update = %+v, %v", got, err)
	}
	doc.Generation, doc.Values = 1, json.RawMessage(`{}`)
	if _, err := d.Update(ctx, doc); err != nil {
		t.Fatalf("rollback step: %v", err)
	}
	if obj, _ := c.Admin().Get(path); kubetest.Str(obj, "metadata", "annotations", cfgAnnotationGeneration) != "1" {
		t.Fatalf("generation annotation after rollback: %v", obj["metadata"])
	}

	if err := d.Delete(ctx, doc.Ref()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin().Get(path); !kubetest.IsNotFound(err) {
		t.Fatalf("ConfigMap still there: %v", err)
	}
	if err := d.Delete(ctx, doc.Ref()); err != nil {
		t.Fatalf("delete of an absent object: %v", err)
	}
	if _, err := d.Read(ctx, doc.Ref()); !errors.Is(err, driver.ErrConfigurationNotFound) {
		t.Fatalf("read after delete: %v", err)
	}
	if _, err := d.Update(ctx, driver.ConfigurationDocument{ID: doc.ID, NamespaceID: nsID, Kind: "agent", Generation: 2, Values: json.RawMessage(`{}`), CreatedAt: doc.CreatedAt}); !errors.Is(err, driver.ErrConfigurationNotFound) {
		t.Fatalf("update after delete: %v", err)
	}
}

func TestConfigurationsOwnership(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	ctx := context.Background()
	d := storageConfigurations(t, c)
	nsID := storageNamespaceID()
	nsName := storageTenantNamespace(t, c, nsID)

	// Another Namespace never sees this Namespace's Configuration, even under the same id.
	otherNS := storageNamespaceID()
	storageTenantNamespace(t, c, otherNS)
	doc := storageDocument(nsID)
	if _, err := d.Create(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Read(ctx, driver.ConfigurationRef{NamespaceID: otherNS, ID: doc.ID}); !errors.Is(err, driver.ErrConfigurationNotFound) {
		t.Fatalf("read from another Namespace: %v", err)
	}

	// Tampered ownership: reads and updates find nothing, delete refuses and leaves the object.
	path := kubetest.CorePath(nsName, "configmaps", configurationConfigMapName(doc.ID))
	tampers := []struct {
		name         string
		patch, undo  kubetest.Object
		deleteRefuse bool
	}{
		{"namespace label", kubetest.Object{"metadata": kubetest.Object{"labels": kubetest.Object{labelNamespace: otherNS}}},
			kubetest.Object{"metadata": kubetest.Object{"labels": kubetest.Object{labelNamespace: nsID}}}, true},
		{"managed-by label", kubetest.Object{"metadata": kubetest.Object{"labels": kubetest.Object{labelManagedBy: nil}}},
			kubetest.Object{"metadata": kubetest.Object{"labels": kubetest.Object{labelManagedBy: managedByValue}}}, true},
		{"generation annotation", kubetest.Object{"metadata": kubetest.Object{"annotations": kubetest.Object{cfgAnnotationGeneration: "01"}}},
			kubetest.Object{"metadata": kubetest.Object{"annotations": kubetest.Object{cfgAnnotationGeneration: "1"}}}, true},
		{"generation disagreeing with the document", kubetest.Object{"metadata": kubetest.Object{"annotations": kubetest.Object{cfgAnnotationGeneration: "2"}}},
			kubetest.Object{"metadata": kubetest.Object{"annotations": kubetest.Object{cfgAnnotationGeneration: "1"}}}, true},
		{"second data key", kubetest.Object{"data": kubetest.Object{"extra": "x"}},
			kubetest.Object{"data": kubetest.Object{"extra": nil}}, true},
		{"binary data", kubetest.Object{"binaryData": kubetest.Object{"extra": "eA=="}},
			kubetest.Object{"binaryData": nil}, true},
	}
	for _, tc := range tampers {
		storageMergePatch(t, c, path, tc.patch)
		if _, err := d.Read(ctx, doc.Ref()); !errors.Is(err, driver.ErrConfigurationNotFound) {
			t.Fatalf("%s: read = %v", tc.name, err)
		}
		up := doc
		up.Generation = 2
		if _, err := d.Update(ctx, up); !errors.Is(err, driver.ErrConfigurationNotFound) {
			t.Fatalf("%s: update = %v", tc.name, err)
		}
		if err := d.Delete(ctx, doc.Ref()); driver.Code(err) != CodeOwnershipConflict {
			t.Fatalf("%s: delete = %v", tc.name, err)
		}
		if _, err := c.Admin().Get(path); err != nil {
			t.Fatalf("%s: the refused object was deleted: %v", tc.name, err)
		}
		storageMergePatch(t, c, path, tc.undo)
		if _, err := d.Read(ctx, doc.Ref()); err != nil {
			t.Fatalf("%s: read after undo: %v", tc.name, err)
		}
	}

	// A foreign ConfigMap under the name a Configuration would take is never adopted.
	foreign := storageDocument(nsID)
	if _, err := c.Admin().Create(kubetest.CorePath(nsName, "configmaps", ""), kubetest.Object{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": kubetest.Object{"name": configurationConfigMapName(foreign.ID)},
		"data":     kubetest.Object{configurationDataKey: "{}"},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(ctx, foreign); driver.Code(err) != CodeOwnershipConflict {
		t.Fatalf("create over a foreign ConfigMap: %v", err)
	}
	if _, err := d.Read(ctx, foreign.Ref()); !errors.Is(err, driver.ErrConfigurationNotFound) {
		t.Fatalf("read of a foreign ConfigMap: %v", err)
	}

	// Two namespaces claiming the Namespace: ownership failure, never a guess.
	dupNS := storageNamespaceID()
	storageTenantNamespace(t, c, dupNS)
	storageCreateNamespace(t, c, "oce-dup-"+hash(dupNS, 12), map[string]any{
		labelManagedBy: managedByValue, labelNamespace: dupNS,
	}, map[string]any{annotationNamespaceID: dupNS})
	if _, err := d.Create(ctx, storageDocument(dupNS)); driver.Code(err) != CodeOwnershipConflict {
		t.Fatalf("create with two claiming namespaces: %v", err)
	}
}

func TestConfigurationsLimits(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	ctx := context.Background()
	d := storageConfigurations(t, c)
	nsID := storageNamespaceID()
	nsName := storageTenantNamespace(t, c, nsID)

	// Validate is side-effect free and refuses what a ConfigMap cannot hold.
	huge := storageDocument(nsID)
	huge.Values = json.RawMessage(`{"blob":"` + strings.Repeat("a", maxConfigMapData) + `"}`)
	var ve *driver.ConfigurationValueError
	if err := d.Validate(ctx, huge); !errors.As(err, &ve) || ve.Code != problem.DetailTooLong || ve.Path != "" {
		t.Fatalf("validate of a huge document: %v", err)
	}
	if _, err := d.Create(ctx, huge); !errors.As(err, &ve) {
		t.Fatalf("create of a huge document: %v", err)
	}
	if _, err := c.Admin().Get(kubetest.CorePath(nsName, "configmaps", configurationConfigMapName(huge.ID))); !kubetest.IsNotFound(err) {
		t.Fatalf("a refused document was stored: %v", err)
	}
	for _, values := range []string{`[1]`, `"x"`, ``, `{`} {
		bad := storageDocument(nsID)
		bad.Values = json.RawMessage(values)
		if err := d.Validate(ctx, bad); !errors.As(err, &ve) || ve.Code != problem.DetailInvalidType {
			t.Fatalf("validate of values %q: %v", values, err)
		}
	}

	// Just below the limit is stored and read back whole.
	big := storageDocument(nsID)
	big.SecretBindings, big.Values = nil, json.RawMessage(`{}`)
	head, _ := encodeConfiguration(big)
	big.Values = json.RawMessage(`{"blob":"` + strings.Repeat("b", maxConfigMapData-len(head)-10) + `"}`)
	if enc, _ := encodeConfiguration(big); len(enc) != maxConfigMapData-1 {
		t.Fatalf("test document is %d bytes", len(enc))
	}
	if _, err := d.Create(ctx, big); err != nil {
		t.Fatalf("create just below 1 MiB: %v", err)
	}
	if got, err := d.Read(ctx, big.Ref()); err != nil || len(got.Values) != len(big.Values) {
		t.Fatalf("read just below 1 MiB: %v", err)
	}

	// References OCC never produces are refused before any request.
	if _, err := d.Read(ctx, driver.ConfigurationRef{NamespaceID: nsID, ID: "cfg_../x"}); !errors.Is(err, errInvalidReference) {
		t.Fatalf("read with a malformed id: %v", err)
	}
	bad := storageDocument(nsID)
	bad.Generation = 0
	if _, err := d.Create(ctx, bad); !errors.Is(err, errInvalidReference) {
		t.Fatalf("create with generation 0: %v", err)
	}
}

func TestConfigurationsNamespaceMissing(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	ctx := context.Background()
	d := storageConfigurations(t, c)
	doc := storageDocument(storageNamespaceID())
	var ve *driver.ConfigurationValueError
	for op, err := range map[string]error{
		"create": func() error { _, err := d.Create(ctx, doc); return err }(),
		"read":   func() error { _, err := d.Read(ctx, doc.Ref()); return err }(),
		"update": func() error { x := doc; x.Generation = 2; _, err := d.Update(ctx, x); return err }(),
	} {
		if driver.Code(err) != CodeNamespaceNotReady || errors.Is(err, driver.ErrConfigurationNotFound) || errors.As(err, &ve) {
			t.Fatalf("%s without a namespace: %v", op, err)
		}
	}
	if err := d.Delete(ctx, doc.Ref()); err != nil {
		t.Fatalf("delete without a namespace: %v", err)
	}
}

func TestConfigurationsUnauthorized(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	ctx := context.Background()
	nsID := storageNamespaceID()
	storageTenantNamespace(t, c, nsID)
	// nobody may not even list namespaces; a token the server does not know is a 401.
	nobody, err := NewConfigurations("config-kubernetes", storageAuth(t, c, kubetest.Nobody), driver.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	doc := storageDocument(nsID)
	if _, err := nobody.Create(ctx, doc); driver.Code(err) != CodeAPIRejected || !strings.Contains(err.Error(), "403") {
		t.Fatalf("create as nobody: %v", err)
	}
	auth := storageAuth(t, c, kubetest.Worker)
	tokenPath := auth["authentication"].(map[string]any)["tokenPath"].(string)
	if err := os.WriteFile(tokenPath, []byte("not-a-known-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	unknown, err := NewConfigurations("config-kubernetes", auth, driver.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unknown.Read(ctx, doc.Ref()); driver.Code(err) != CodeAPIRejected || !strings.Contains(err.Error(), "401") {
		t.Fatalf("read with an unknown token: %v", err)
	}
}

func TestStorageErrorMapping(t *testing.T) {
	t.Parallel()
	timeout := &kube.TransportError{Code: "TIMEOUT"}
	if err := storageError(timeout, true); !strings.Contains(err.Error(), "outcome of the Kubernetes write is unknown after timeout") {
		t.Fatalf("write timeout: %v", err)
	}
	var td *driver.TransientDependencyError
	if err := storageError(timeout, false); !errors.As(err, &td) || td.Code != CodeAPITimeout {
		t.Fatalf("read timeout: %v", err)
	}
	for _, status := range []int{401, 403} {
		err := storageError(&kube.APIError{Status: status, Reason: "Forbidden", Message: "secrets is forbidden: User cannot get value zz-private-zz"}, false)
		if !strings.Contains(err.Error(), "not authorized") || strings.Contains(err.Error(), "zz-private-zz") || !driver.IsPermanent(err) {
			t.Fatalf("%d: %v", status, err)
		}
	}
	if err := storageError(&kube.APIError{Status: 409, Reason: "Conflict", Message: "zz-private-zz"}, true); driver.Code(err) != CodeObjectConflict || strings.Contains(err.Error(), "zz-private-zz") {
		t.Fatalf("409: %v", err)
	}
	if err := storageError(&kube.APIError{Status: 503, Message: "zz-private-zz"}, true); !errors.As(err, &td) || strings.Contains(err.Error(), "zz-private-zz") {
		t.Fatalf("503: %v", err)
	}
}
