package kubernetes

import (
	"context"
	"errors"
	"strings"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
)

// Kubernetes Secret Driver: one Opaque Secret per OCC Secret in the Namespace's
// gateway namespace (single cluster: the tenant namespace), its value under one key. Values are
// never logged, wrapped or returned in an error; server answers are reduced to their status.

// Secret layout.
const (
	secretDataKey = "value"
	secretType    = "Opaque"

	secAnnotationID       = "openclaw.dev/secret-id"
	secAnnotationName     = "openclaw.dev/secret-name"
	secAnnotationDriverID = "openclaw.dev/secret-driver-id"
)

var errSecretValueTooLarge = errors.New("kubernetes: the Secret value exceeds 65536 bytes")

// Secrets is the Kubernetes Secret Driver.
type Secrets struct {
	id     string
	client *kube.Client
}

var (
	_ driver.Secret      = (*Secrets)(nil)
	_ driver.ValueReader = (*Secrets)(nil)
)

// SecretSchema is the closed configuration schema of the Secret Driver.
func SecretSchema() driver.ObjectSchema {
	return StorageSchema("Kubernetes Secret Driver: one Opaque Secret per OCC Secret in the Namespace's Kubernetes namespace.")
}

// NewSecrets builds the Secret Driver selected as id. It makes no request.
func NewSecrets(id string, configuration map[string]any, env driver.Environment) (*Secrets, error) {
	c, err := newStorageClient(SecretSchema(), id, configuration, env)
	if err != nil {
		return nil, err
	}
	return &Secrets{id: id, client: c}, nil
}

// ID implements driver.Secret.
func (s *Secrets) ID() string { return s.id }

// Implementation implements driver.Secret.
func (s *Secrets) Implementation() string { return Name }

// secretView is the part of a Secret the driver reads; encoding/json decodes data from base64.
type secretView struct {
	Metadata  kube.Meta         `json:"metadata"`
	Type      string            `json:"type"`
	Immutable *bool             `json:"immutable"`
	Data      map[string][]byte `json:"data"`
}

// gatewayNamespace finds the namespace labelled openclaw.dev/gateway-namespace=<namespaceID>: nil
// when there is none; an ownership failure when several claim it or the one found is not exactly
// the tenant namespace of namespaceID (managed, or adopted with the external marker).
//
// Single cluster, the gateway namespace is the tenant namespace. An adopted namespace receives only
// openclaw.dev/namespace and the namespace-id annotation when the Compute Driver claims it, so
// without any gateway-labelled namespace the adopted tenant namespace (and only an adopted one
// without a gateway label) is the placement.
func (s *Secrets) gatewayNamespace(ctx context.Context, namespaceID string) (*tenantNamespace, error) {
	var list struct {
		Items []namespaceView `json:"items"`
	}
	if err := s.client.List(ctx, kube.Namespaces.Path("", ""), kube.Selector(labelGatewayNamespace, namespaceID), &list); err != nil {
		return nil, storageError(err, false)
	}
	switch len(list.Items) {
	case 0:
		tn, err := findTenantNamespace(ctx, s.client, namespaceID)
		switch {
		case err != nil:
			return nil, err
		case tn == nil:
			return nil, nil
		case !tn.External:
			return nil, ownershipError("Namespace", tn.Name) // a managed tenant namespace always carries the label
		}
		if _, labelled := tn.Meta.Labels[labelGatewayNamespace]; labelled {
			return nil, ownershipError("Namespace", tn.Name)
		}
		return tn, nil
	case 1:
	default:
		return nil, ownershipError("Namespace", "for "+namespaceID)
	}
	v := list.Items[0]
	m := v.Metadata
	managed := (owner{namespaceID: namespaceID}).owns(m)
	adopted := m.Annotations[annotationNamespaceLifecycle] == lifecycleExternal &&
		m.Labels[labelNamespace] == namespaceID && m.Annotations[annotationNamespaceID] == namespaceID
	if m.Labels[labelGatewayNamespace] != namespaceID || (!managed && !adopted) {
		return nil, ownershipError("Namespace", m.Name)
	}
	return v.tenant(), nil
}

func validIdentity(id driver.SecretIdentity) bool {
	return validPlatformID("ns", id.NamespaceID) && validPlatformID("sec", id.ID)
}

// secretNamePrefix is the part of the object name fixed by the identity; the rest is random.
func secretNamePrefix(id driver.SecretIdentity) string {
	return "secret-" + hash(id.NamespaceID, 12) + "-" + hash(id.ID, 12) + "-"
}

// Create implements driver.Secret: a new Secret object under a random name in the Active gateway
// namespace.
func (s *Secrets) Create(ctx context.Context, identity driver.SecretIdentity, value []byte) (driver.SecretRef, error) {
	if !validIdentity(identity) {
		return driver.SecretRef{}, errInvalidReference
	}
	if len(value) > driver.MaxSecretValueBytes {
		return driver.SecretRef{}, errSecretValueTooLarge
	}
	ns, err := s.gatewayNamespace(ctx, identity.NamespaceID)
	if err != nil {
		return driver.SecretRef{}, err
	}
	if ns == nil || !ns.Active {
		return driver.SecretRef{}, namespaceNotReady()
	}
	name := secretObjectName(identity.NamespaceID, identity.ID, uuid.NewString())
	obj := kube.Object{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": kube.Object{
			"name": name, "namespace": ns.Name,
			"labels": map[string]string{
				labelManagedBy: managedByValue, labelNamespace: identity.NamespaceID, labelSecret: identity.ID,
			},
			"annotations": map[string]string{
				annotationNamespaceID: identity.NamespaceID, secAnnotationID: identity.ID,
				secAnnotationName: identity.Name, secAnnotationDriverID: s.id,
			},
		},
		"type": secretType, "immutable": false,
		"data": map[string][]byte{secretDataKey: value},
	}
	var out secretView
	if err := s.client.Create(ctx, kube.Secrets.Path(ns.Name, ""), obj, &out); err != nil {
		return driver.SecretRef{}, storageError(err, true)
	}
	clear(out.Data[secretDataKey])
	if out.Metadata.UID == "" || out.Metadata.Name != name {
		return driver.SecretRef{}, ownershipError("Secret", name)
	}
	return driver.SecretRef{NamespaceName: ns.Name, Name: name, Key: secretDataKey, UID: out.Metadata.UID}, nil
}

// owned reads the live object of secret and proves it is this Secret's: placement, name, UID,
// type, labels, annotations (with this driver's id) and the single data key. Anything else is
// ErrSecretNotFound, never a substitute. absentOK reports a missing or terminating namespace as
// (nil, nil) instead, for Delete.
func (s *Secrets) owned(ctx context.Context, secret driver.StoredSecret, absentOK bool) (*secretView, error) {
	ref := secret.Ref
	if !validIdentity(secret.SecretIdentity) {
		return nil, errInvalidReference
	}
	if ref.Key != secretDataKey || ref.UID == "" || ref.NamespaceName == "" ||
		!strings.HasPrefix(ref.Name, secretNamePrefix(secret.SecretIdentity)) {
		return nil, driver.ErrSecretNotFound
	}
	ns, err := s.gatewayNamespace(ctx, secret.NamespaceID)
	if err != nil {
		return nil, err
	}
	switch {
	case ns == nil || ns.Name != ref.NamespaceName:
		return nil, driver.ErrSecretNotFound
	case !ns.Active && absentOK:
		return nil, nil // the namespace's deletion removes the Secret
	case !ns.Active:
		return nil, namespaceNotReady()
	}
	var v secretView
	if err := s.client.Get(ctx, kube.Secrets.Path(ns.Name, ref.Name), &v); err != nil {
		if kube.IsNotFound(err) {
			return nil, driver.ErrSecretNotFound
		}
		return nil, storageError(err, false)
	}
	m := v.Metadata
	_, hasValue := v.Data[secretDataKey]
	if m.Name != ref.Name || m.Namespace != ns.Name || m.UID != ref.UID || m.Terminating() ||
		v.Type != secretType || (v.Immutable != nil && *v.Immutable) || len(v.Data) != 1 || !hasValue ||
		!(owner{namespaceID: secret.NamespaceID}).owns(m) || m.Labels[labelSecret] != secret.ID ||
		m.Annotations[secAnnotationID] != secret.ID || m.Annotations[secAnnotationName] != secret.Name ||
		m.Annotations[secAnnotationDriverID] != s.id {
		clear(v.Data[secretDataKey])
		return nil, driver.ErrSecretNotFound
	}
	return &v, nil
}

// Update implements driver.Secret: replace the value of the owned object, keeping its metadata,
// guarded by its resourceVersion.
func (s *Secrets) Update(ctx context.Context, secret driver.StoredSecret, value []byte) error {
	if len(value) > driver.MaxSecretValueBytes {
		return errSecretValueTooLarge
	}
	v, err := s.owned(ctx, secret, false)
	if err != nil {
		return err
	}
	clear(v.Data[secretDataKey])
	m := v.Metadata
	obj := kube.Object{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": kube.Object{
			"name": m.Name, "namespace": m.Namespace, "uid": m.UID, "resourceVersion": m.ResourceVersion,
			"labels": m.Labels, "annotations": m.Annotations,
		},
		"type": secretType, "immutable": false,
		"data": map[string][]byte{secretDataKey: value},
	}
	var out secretView
	if err := s.client.Update(ctx, kube.Secrets.Path(m.Namespace, m.Name), obj, &out); err != nil {
		if kube.IsNotFound(err) {
			return driver.ErrSecretNotFound
		}
		return storageError(err, true)
	}
	clear(out.Data[secretDataKey])
	if out.Metadata.UID != m.UID {
		return driver.ErrSecretNotFound
	}
	return nil
}

// Delete implements driver.Secret: only the owned object, with its UID and resourceVersion as
// preconditions; an absent (or no longer provably owned) object is success.
func (s *Secrets) Delete(ctx context.Context, secret driver.StoredSecret) error {
	v, err := s.owned(ctx, secret, true)
	if errors.Is(err, driver.ErrSecretNotFound) || (err == nil && v == nil) {
		return nil
	}
	if err != nil {
		return err
	}
	clear(v.Data[secretDataKey])
	m := v.Metadata
	if err := s.client.Delete(ctx, kube.Secrets.Path(m.Namespace, m.Name), m.UID, m.ResourceVersion); err != nil {
		if kube.IsNotFound(err) {
			return nil
		}
		return storageError(err, true)
	}
	return nil
}

// Resolve implements driver.Secret: the stored reference once the live object proves it.
func (s *Secrets) Resolve(ctx context.Context, secret driver.StoredSecret) (driver.SecretRef, error) {
	v, err := s.owned(ctx, secret, false)
	if err != nil {
		return driver.SecretRef{}, err
	}
	clear(v.Data[secretDataKey])
	return secret.Ref, nil
}

// WithValue implements driver.ValueReader. The buffer is cleared when fn returns.
func (s *Secrets) WithValue(ctx context.Context, secret driver.StoredSecret, fn func(value []byte) error) error {
	v, err := s.owned(ctx, secret, false)
	if err != nil {
		return err
	}
	value := v.Data[secretDataKey]
	defer clear(value)
	return fn(value)
}
