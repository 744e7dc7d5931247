package kubernetes

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/testkit/kubetest"
)

func storageSecrets(t *testing.T, c *kubetest.Cluster, id, identity string) *Secrets {
	t.Helper()
	d, err := NewSecrets(id, storageAuth(t, c, identity), driver.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func storageSecretIdentity(namespaceID string) driver.SecretIdentity {
	return driver.SecretIdentity{ID: "sec_" + uuid.NewString(), NamespaceID: namespaceID, Name: "openai-api-key"}
}

// storageNoValueIn fails when value appears in err's text.
func storageNoValueIn(t *testing.T, err error, value string) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), value) {
		t.Fatalf("error %q carries the value", err)
	}
}

func TestSecretsRoundTrip(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	ctx := context.Background()
	d := storageSecrets(t, c, "secret-kubernetes", kubetest.Worker)
	nsID := storageNamespaceID()
	nsName := storageTenantNamespace(t, c, nsID)
	id := storageSecretIdentity(nsID)
	const first, second = "sk-first-value-0123456789", "sk-second-value-9876543210"

	ref, err := d.Create(ctx, id, []byte(first))
	if err != nil {
		t.Fatal(err)
	}
	if ref.NamespaceName != nsName || ref.Key != "value" || ref.UID == "" || !strings.HasPrefix(ref.Name, secretNamePrefix(id)) ||
		len(ref.Name) != len("secret-")+12+1+12+1+12 {
		t.Fatalf("ref = %+v", ref)
	}
	stored := driver.StoredSecret{SecretIdentity: id, Ref: ref}

	// The object: Opaque, mutable, one key, ownership labels and annotations, the value only in data.
	path := kubetest.CorePath(nsName, "secrets", ref.Name)
	obj, err := c.Admin().Get(path)
	if err != nil {
		t.Fatal(err)
	}
	meta := obj["metadata"].(map[string]any)
	labels, annotations := meta["labels"].(map[string]any), meta["annotations"].(map[string]any)
	if obj["type"] != "Opaque" || obj["immutable"] != false || meta["uid"] != ref.UID {
		t.Fatalf("secret = %v", obj)
	}
	if labels[labelManagedBy] != managedByValue || labels[labelNamespace] != nsID || labels[labelSecret] != id.ID || len(labels) != 3 {
		t.Fatalf("labels = %v", labels)
	}
	if annotations[annotationNamespaceID] != nsID || annotations[secAnnotationID] != id.ID || annotations[secAnnotationName] != id.Name ||
		annotations[secAnnotationDriverID] != "secret-kubernetes" || len(annotations) != 4 {
		t.Fatalf("annotations = %v", annotations)
	}
	data := obj["data"].(map[string]any)
	if raw, _ := base64.StdEncoding.DecodeString(data["value"].(string)); len(data) != 1 || string(raw) != first {
		t.Fatalf("data keys = %d", len(data))
	}
	metaJSON, _ := json.Marshal(meta)
	if bytes.Contains(metaJSON, []byte(first)) {
		t.Fatal("the value appears in the Secret's metadata")
	}

	if got, err := d.Resolve(ctx, stored); err != nil || got != ref {
		t.Fatalf("resolve = %+v, %v", got, err)
	}
	var seen string
	if err := d.WithValue(ctx, stored, func(v []byte) error { seen = string(v); return nil }); err != nil || seen != first {
		t.Fatalf("with value: %v", err)
	}
	fnErr := errors.New("fn failed")
	if err := d.WithValue(ctx, stored, func([]byte) error { return fnErr }); !errors.Is(err, fnErr) {
		t.Fatalf("with value passes fn's error on: %v", err)
	}

	rvBefore := meta["resourceVersion"]
	if err := d.Update(ctx, stored, []byte(second)); err != nil {
		t.Fatal(err)
	}
	if err := d.WithValue(ctx, stored, func(v []byte) error { seen = string(v); return nil }); err != nil || seen != second {
		t.Fatalf("value after update: %v", err)
	}
	obj, _ = c.Admin().Get(path)
	if kubetest.Str(obj, "metadata", "uid") != ref.UID || kubetest.Str(obj, "metadata", "resourceVersion") == rvBefore ||
		kubetest.Str(obj, "metadata", "annotations", secAnnotationDriverID) != "secret-kubernetes" {
		t.Fatalf("metadata after update = %v", obj["metadata"])
	}

	// Values never leave data: no ConfigMap or annotation in the namespace holds them.
	cms, err := c.Admin().List(kubetest.CorePath(nsName, "configmaps", ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms {
		b, _ := json.Marshal(cm)
		if bytes.Contains(b, []byte(first)) || bytes.Contains(b, []byte(second)) {
			t.Fatalf("ConfigMap %s holds a Secret value", kubetest.Str(cm, "metadata", "name"))
		}
	}

	if err := d.Delete(ctx, stored); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin().Get(path); !kubetest.IsNotFound(err) {
		t.Fatalf("Secret still there: %v", err)
	}
	if err := d.Delete(ctx, stored); err != nil {
		t.Fatalf("delete of an absent Secret: %v", err)
	}
	if _, err := d.Resolve(ctx, stored); !errors.Is(err, driver.ErrSecretNotFound) {
		t.Fatalf("resolve after delete: %v", err)
	}
	if err := d.Update(ctx, stored, []byte(first)); !errors.Is(err, driver.ErrSecretNotFound) {
		t.Fatalf("update after delete: %v", err)
	}
	if err := d.WithValue(ctx, stored, func([]byte) error { t.Fatal("fn called"); return nil }); !errors.Is(err, driver.ErrSecretNotFound) {
		t.Fatalf("with value after delete: %v", err)
	}

	// A re-created Secret is a new object.
	ref2, err := d.Create(ctx, id, []byte(first))
	if err != nil || ref2.Name == ref.Name || ref2.UID == ref.UID {
		t.Fatalf("re-create = %+v, %v", ref2, err)
	}
}

func TestSecretsOwnership(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	ctx := context.Background()
	d := storageSecrets(t, c, "secret-kubernetes", kubetest.Worker)
	nsID := storageNamespaceID()
	nsName := storageTenantNamespace(t, c, nsID)
	id := storageSecretIdentity(nsID)
	const value = "sk-owned-value-0123456789"
	ref, err := d.Create(ctx, id, []byte(value))
	if err != nil {
		t.Fatal(err)
	}
	stored := driver.StoredSecret{SecretIdentity: id, Ref: ref}
	path := kubetest.CorePath(nsName, "secrets", ref.Name)

	// Forged references and other drivers are never served.
	other := storageSecrets(t, c, "secret-other", kubetest.Worker)
	forgeries := map[string]driver.StoredSecret{}
	f := stored
	f.Ref.UID = uuid.NewString()
	forgeries["uid"] = f
	f = stored
	f.Ref.Key = "token"
	forgeries["key"] = f
	f = stored
	f.ID = "sec_" + uuid.NewString()
	forgeries["secret id"] = f
	f = stored
	f.Name = "another-name"
	forgeries["secret name"] = f
	f = stored
	f.Ref.NamespaceName = "kube-system"
	forgeries["namespace"] = f
	otherNS := storageNamespaceID()
	storageTenantNamespace(t, c, otherNS)
	f = stored
	f.NamespaceID = otherNS
	forgeries["OCC Namespace"] = f
	for name, s := range forgeries {
		if _, err := d.Resolve(ctx, s); !errors.Is(err, driver.ErrSecretNotFound) {
			t.Fatalf("forged %s: resolve = %v", name, err)
		}
		if err := d.WithValue(ctx, s, func([]byte) error { t.Fatalf("forged %s: fn called", name); return nil }); !errors.Is(err, driver.ErrSecretNotFound) {
			t.Fatalf("forged %s: with value = %v", name, err)
		}
		if err := d.Delete(ctx, s); err != nil {
			t.Fatalf("forged %s: delete = %v", name, err)
		}
	}
	if _, err := other.Resolve(ctx, stored); !errors.Is(err, driver.ErrSecretNotFound) {
		t.Fatalf("another driver id: %v", err)
	}
	if err := other.Delete(ctx, stored); err != nil {
		t.Fatalf("another driver's delete: %v", err)
	}
	if _, err := c.Admin().Get(path); err != nil {
		t.Fatalf("a refused delete removed the Secret: %v", err)
	}

	// Tampered metadata or data: not found (delete leaves it alone), and fine again once undone.
	tampers := []struct {
		name        string
		patch, undo kubetest.Object
	}{
		{"driver id", kubetest.Object{"metadata": kubetest.Object{"annotations": kubetest.Object{secAnnotationDriverID: "secret-other"}}},
			kubetest.Object{"metadata": kubetest.Object{"annotations": kubetest.Object{secAnnotationDriverID: "secret-kubernetes"}}}},
		{"secret label", kubetest.Object{"metadata": kubetest.Object{"labels": kubetest.Object{labelSecret: "sec_x"}}},
			kubetest.Object{"metadata": kubetest.Object{"labels": kubetest.Object{labelSecret: id.ID}}}},
		{"namespace annotation", kubetest.Object{"metadata": kubetest.Object{"annotations": kubetest.Object{annotationNamespaceID: nil}}},
			kubetest.Object{"metadata": kubetest.Object{"annotations": kubetest.Object{annotationNamespaceID: nsID}}}},
		{"second data key", kubetest.Object{"data": kubetest.Object{"other": "eA=="}},
			kubetest.Object{"data": kubetest.Object{"other": nil}}},
		{"immutable", kubetest.Object{"immutable": true}, nil},
	}
	for _, tc := range tampers {
		storageMergePatch(t, c, path, tc.patch)
		if _, err := d.Resolve(ctx, stored); !errors.Is(err, driver.ErrSecretNotFound) {
			t.Fatalf("%s: resolve = %v", tc.name, err)
		}
		if err := d.Update(ctx, stored, []byte("new")); !errors.Is(err, driver.ErrSecretNotFound) {
			t.Fatalf("%s: update = %v", tc.name, err)
		}
		if err := d.Delete(ctx, stored); err != nil {
			t.Fatalf("%s: delete = %v", tc.name, err)
		}
		if _, err := c.Admin().Get(path); err != nil {
			t.Fatalf("%s: the tampered Secret was deleted: %v", tc.name, err)
		}
		if tc.undo == nil {
			break // an immutable Secret stays immutable
		}
		storageMergePatch(t, c, path, tc.undo)
		if _, err := d.Resolve(ctx, stored); err != nil {
			t.Fatalf("%s: resolve after undo: %v", tc.name, err)
		}
	}

	// A second namespace claiming the gateway role for the Namespace is an ownership failure.
	dupNS := storageNamespaceID()
	storageTenantNamespace(t, c, dupNS)
	storageCreateNamespace(t, c, "oce-dup-"+hash(dupNS, 12), map[string]any{labelGatewayNamespace: dupNS}, nil)
	if _, err := d.Create(ctx, storageSecretIdentity(dupNS), []byte(value)); driver.Code(err) != CodeOwnershipConflict {
		t.Fatalf("create with two gateway namespaces: %v", err)
	}
	// A namespace labelled for the Namespace without the ownership markers is refused too.
	foreignNS := storageNamespaceID()
	storageCreateNamespace(t, c, "oce-foreign-"+hash(foreignNS, 12), map[string]any{labelGatewayNamespace: foreignNS}, nil)
	if _, err := d.Create(ctx, storageSecretIdentity(foreignNS), []byte(value)); driver.Code(err) != CodeOwnershipConflict {
		t.Fatalf("create in an unowned namespace: %v", err)
	}
	// An adopted (external) namespace carrying the markers is accepted.
	adoptedNS := storageNamespaceID()
	storageCreateNamespace(t, c, "adopted-"+hash(adoptedNS, 12), map[string]any{labelNamespace: adoptedNS, labelGatewayNamespace: adoptedNS},
		map[string]any{annotationNamespaceID: adoptedNS, annotationNamespaceLifecycle: lifecycleExternal})
	if _, err := d.Create(ctx, storageSecretIdentity(adoptedNS), []byte(value)); err != nil {
		t.Fatalf("create in an adopted namespace: %v", err)
	}
	// An adopted namespace as the Compute Driver leaves it (no gateway label) is the placement too;
	// a managed one without the gateway label is not.
	adopted2 := storageNamespaceID()
	adopted2Name := "adopted-" + hash(adopted2, 12)
	storageCreateNamespace(t, c, adopted2Name, map[string]any{labelNamespace: adopted2},
		map[string]any{annotationNamespaceID: adopted2, annotationNamespaceLifecycle: lifecycleExternal})
	if ref, err := d.Create(ctx, storageSecretIdentity(adopted2), []byte(value)); err != nil || ref.NamespaceName != adopted2Name {
		t.Fatalf("create in an adopted namespace without the gateway label: %+v, %v", ref, err)
	}
	unlabelled := storageNamespaceID()
	storageCreateNamespace(t, c, managedNamespaceName(unlabelled), map[string]any{labelManagedBy: managedByValue, labelNamespace: unlabelled},
		map[string]any{annotationNamespaceID: unlabelled})
	if _, err := d.Create(ctx, storageSecretIdentity(unlabelled), []byte(value)); driver.Code(err) != CodeOwnershipConflict {
		t.Fatalf("create in a managed namespace without the gateway label: %v", err)
	}
}

func TestSecretsLimitsAndPlacement(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	ctx := context.Background()
	d := storageSecrets(t, c, "secret-kubernetes", kubetest.Worker)
	nsID := storageNamespaceID()
	nsName := storageTenantNamespace(t, c, nsID)

	largest := bytes.Repeat([]byte{'v'}, driver.MaxSecretValueBytes)
	ref, err := d.Create(ctx, storageSecretIdentity(nsID), largest)
	if err != nil {
		t.Fatalf("create of the largest value: %v", err)
	}
	tooLarge := append(bytes.Repeat([]byte{'w'}, driver.MaxSecretValueBytes), 'w')
	if _, err := d.Create(ctx, storageSecretIdentity(nsID), tooLarge); err == nil {
		t.Fatal("an oversized value was stored")
	} else {
		storageNoValueIn(t, err, string(tooLarge[:64]))
	}
	stored := driver.StoredSecret{SecretIdentity: driver.SecretIdentity{ID: "", NamespaceID: nsID}, Ref: ref}
	if err := d.Update(ctx, stored, tooLarge); err == nil {
		t.Fatal("an oversized update was accepted")
	}
	list, err := c.Admin().List(kubetest.CorePath(nsName, "secrets", ""), nil)
	if err != nil || len(list) != 1 {
		t.Fatalf("secrets in the namespace: %d, %v", len(list), err)
	}

	// Without the namespace: creates wait for provisioning (dependency failure), the rest find
	// nothing to act on.
	missing := storageSecretIdentity(storageNamespaceID())
	_, err = d.Create(ctx, missing, []byte("sk-missing-namespace-value"))
	if driver.Code(err) != CodeNamespaceNotReady || errors.Is(err, driver.ErrSecretNotFound) {
		t.Fatalf("create without a namespace: %v", err)
	}
	storageNoValueIn(t, err, "sk-missing-namespace-value")
	gone := driver.StoredSecret{SecretIdentity: missing, Ref: driver.SecretRef{NamespaceName: managedNamespaceName(missing.NamespaceID),
		Name: secretNamePrefix(missing) + "000000000000", Key: "value", UID: uuid.NewString()}}
	if _, err := d.Resolve(ctx, gone); !errors.Is(err, driver.ErrSecretNotFound) {
		t.Fatalf("resolve without a namespace: %v", err)
	}
	if err := d.Delete(ctx, gone); err != nil {
		t.Fatalf("delete without a namespace: %v", err)
	}
	if _, err := d.Create(ctx, driver.SecretIdentity{ID: "sec_x", NamespaceID: nsID}, []byte("v")); !errors.Is(err, errInvalidReference) {
		t.Fatalf("create with a malformed id: %v", err)
	}
}

// TestSecretsNotAuthorized uses a private cluster: it grants an extra identity namespace access
// without Secret access, which must not disturb the shared cluster's identities.
func TestSecretsNotAuthorized(t *testing.T) {
	t.Parallel()
	c := kubetest.Start(t, kubetest.Options{ExtraIdentities: []string{"observer"}, NoControllerManager: true, NoKubelet: true})
	c.GrantClusterRole(t, "observer", kubetest.NamespaceObserverRole)
	ctx := context.Background()
	nsID := storageNamespaceID()
	storageTenantNamespace(t, c, nsID)
	const value = "sk-denied-value-0123456789"

	observer := storageSecrets(t, c, "secret-kubernetes", "observer")
	_, err := observer.Create(ctx, storageSecretIdentity(nsID), []byte(value))
	if !strings.Contains(err.Error(), "not authorized") || !strings.Contains(err.Error(), "403") || errors.Is(err, driver.ErrSecretNotFound) {
		t.Fatalf("create without Secret access: %v", err)
	}
	storageNoValueIn(t, err, value)

	worker := storageSecrets(t, c, "secret-kubernetes", kubetest.Worker)
	id := storageSecretIdentity(nsID)
	ref, err := worker.Create(ctx, id, []byte(value))
	if err != nil {
		t.Fatal(err)
	}
	stored := driver.StoredSecret{SecretIdentity: id, Ref: ref}
	for op, err := range map[string]error{
		"resolve": func() error { _, err := observer.Resolve(ctx, stored); return err }(),
		"update":  observer.Update(ctx, stored, []byte(value+"2")),
		"delete":  observer.Delete(ctx, stored),
		"value":   observer.WithValue(ctx, stored, func([]byte) error { t.Fatal("fn called"); return nil }),
	} {
		if err == nil || !strings.Contains(err.Error(), "not authorized") || errors.Is(err, driver.ErrSecretNotFound) {
			t.Fatalf("%s without Secret access: %v", op, err)
		}
		storageNoValueIn(t, err, value)
	}

	// No namespace access at all: also "not authorized", never "not found".
	nobody := storageSecrets(t, c, "secret-kubernetes", kubetest.Nobody)
	if _, err := nobody.Resolve(ctx, stored); err == nil || !strings.Contains(err.Error(), "not authorized") || errors.Is(err, driver.ErrSecretNotFound) {
		t.Fatalf("resolve as nobody: %v", err)
	}
	if err := worker.Delete(ctx, stored); err != nil {
		t.Fatal(err)
	}
}
