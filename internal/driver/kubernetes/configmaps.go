package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
	"github.com/openclaw/occ/internal/problem"
)

// Kubernetes Configuration Driver: one ConfigMap per Configuration in the tenant
// namespace, holding the whole document under one key.

// ConfigMap layout.
const (
	configurationDataKey = "openclaw.json"
	// maxConfigMapData is the API server's bound on a ConfigMap's data; the document must stay
	// below it.
	maxConfigMapData = 1 << 20

	cfgAnnotationID         = "openclaw.dev/configuration-id"
	cfgAnnotationKind       = "openclaw.dev/configuration-kind"
	cfgAnnotationGeneration = "openclaw.dev/configuration-generation"
	cfgAnnotationCreatedAt  = "openclaw.dev/configuration-created-at"
)

// Codes of the storage drivers' own failures.
const (
	// CodeNamespaceNotReady: the tenant namespace does not exist yet or is not Active (the API
	// answers 503 while the Namespace is provisioning).
	CodeNamespaceNotReady = "KUBERNETES_NAMESPACE_NOT_READY"
	// CodeObjectConflict: the object changed between our read and our write.
	CodeObjectConflict = "KUBERNETES_OBJECT_CONFLICT"
	// CodeConfigurationUpdateRefused: an update would change immutable metadata or skip a
	// generation.
	CodeConfigurationUpdateRefused = "KUBERNETES_CONFIGURATION_UPDATE_REFUSED"
)

var (
	generationPattern = regexp.MustCompile(`^[1-9][0-9]{0,15}$`)
	// platformID is an OCC id: <prefix>_<uuid>. Ids become label values, so nothing else passes.
	platformID = regexp.MustCompile(`^(ns|cfg|sec)_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

	errInvalidReference = errors.New("kubernetes: the reference does not name an OCC resource")
)

func validPlatformID(prefix, id string) bool {
	m := platformID.FindStringSubmatch(id)
	return m != nil && m[1] == prefix
}

// namespaceNotReady is the dependency failure of a tenant namespace that is missing or not Active.
func namespaceNotReady() error {
	return &driver.RetryableError{Code: CodeNamespaceNotReady, Reason: "The Namespace's Kubernetes namespace does not exist yet or is not active."}
}

// storageError maps a client error of the storage drivers. A write that timed out may have been
// applied, so it says the outcome is unknown; 401/403 say the driver is not authorized. Nothing
// from the server's answer but its status is kept.
func storageError(err error, write bool) error {
	var te *kube.TransportError
	if write && errors.As(err, &te) && te.Timeout() {
		return &driver.RetryableError{Code: CodeAPITimeout, Reason: "The outcome of the Kubernetes write is unknown after timeout."}
	}
	switch status := kube.StatusOf(err); status {
	case 401, 403:
		return &driver.PermanentError{Code: CodeAPIRejected,
			Reason: "The driver is not authorized for this Kubernetes request: HTTP status " + strconv.Itoa(status) + "."}
	case 409:
		return &driver.RetryableError{Code: CodeObjectConflict, Reason: "The Kubernetes object changed concurrently."}
	}
	return classify(err)
}

// newStorageClient validates a storage driver's {authentication} configuration and builds its
// client. It makes no request.
func newStorageClient(schema driver.ObjectSchema, id string, configuration map[string]any, env driver.Environment) (*kube.Client, error) {
	if err := schema.Validate(configuration); err != nil {
		return nil, err
	}
	if id == "" {
		return nil, errors.New("kubernetes: empty driver id")
	}
	c, err := kube.New(kube.Options{Auth: parseAuth(configuration), Env: env.Getenv, FieldManager: FieldManager})
	if err != nil {
		return nil, authConfigurationError(err)
	}
	return c, nil
}

// Configurations is the Kubernetes Configuration Driver.
type Configurations struct {
	id     string
	client *kube.Client
}

var _ driver.Configuration = (*Configurations)(nil)

// ConfigurationSchema is the closed configuration schema of the Configuration Driver.
func ConfigurationSchema() driver.ObjectSchema {
	return StorageSchema("Kubernetes Configuration Driver: one ConfigMap per Configuration in the Namespace's Kubernetes namespace.")
}

// NewConfigurations builds the Configuration Driver selected as id. It makes no request: RBAC and
// namespace problems surface on the first operation.
func NewConfigurations(id string, configuration map[string]any, env driver.Environment) (*Configurations, error) {
	c, err := newStorageClient(ConfigurationSchema(), id, configuration, env)
	if err != nil {
		return nil, err
	}
	return &Configurations{id: id, client: c}, nil
}

// ID implements driver.Configuration.
func (c *Configurations) ID() string { return c.id }

// Implementation implements driver.Configuration.
func (c *Configurations) Implementation() string { return Name }

// configMapView is the part of a ConfigMap the driver reads.
type configMapView struct {
	Metadata   kube.Meta         `json:"metadata"`
	Data       map[string]string `json:"data"`
	BinaryData map[string]string `json:"binaryData"`
}

func encodeConfiguration(doc driver.ConfigurationDocument) ([]byte, error) {
	doc.CreatedAt = doc.CreatedAt.UTC()
	return json.Marshal(doc)
}

// Validate implements driver.Configuration without any request: values must be a JSON object and
// the stored document must fit a ConfigMap.
func (c *Configurations) Validate(_ context.Context, doc driver.ConfigurationDocument) error {
	trimmed := bytes.TrimSpace(doc.Values)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return &driver.ConfigurationValueError{Detail: problem.Detail{Path: "", Code: problem.DetailInvalidType, Message: "The values must be a JSON object."}}
	}
	if len(doc.SecretBindings) > 0 && !json.Valid(doc.SecretBindings) {
		return &driver.ConfigurationValueError{Detail: problem.Detail{Path: "", Code: problem.DetailInvalidValue, Message: "The Secret bindings cannot be stored."}}
	}
	data, err := encodeConfiguration(doc)
	if err != nil {
		return &driver.ConfigurationValueError{Detail: problem.Detail{Path: "", Code: problem.DetailInvalidValue, Message: "The values cannot be stored."}}
	}
	if len(data) >= maxConfigMapData {
		return &driver.ConfigurationValueError{Detail: problem.Detail{Path: "", Code: problem.DetailTooLong, Message: "The Configuration must be smaller than 1 MiB to fit in a ConfigMap."}}
	}
	return nil
}

// checkDocument refuses metadata OCC never produces, before any request.
func checkDocument(doc driver.ConfigurationDocument) error {
	if !validPlatformID("ns", doc.NamespaceID) || !validPlatformID("cfg", doc.ID) ||
		doc.Kind != driver.ConfigurationKindAgent || doc.Generation < 1 || doc.CreatedAt.IsZero() {
		return errInvalidReference
	}
	return nil
}

// placement returns the Active tenant namespace of namespaceID, or a dependency failure.
func (c *Configurations) placement(ctx context.Context, namespaceID string) (*tenantNamespace, error) {
	ns, err := findTenantNamespace(ctx, c.client, namespaceID)
	if err != nil {
		return nil, err
	}
	if ns == nil || !ns.Active {
		return nil, namespaceNotReady()
	}
	return ns, nil
}

// configMapObject is the ConfigMap of doc; meta carries resourceVersion and foreign labels and
// annotations to keep on an update (nil on create).
func configMapObject(doc driver.ConfigurationDocument, namespace string, data []byte, meta *kube.Meta) kube.Object {
	labels := map[string]string{}
	annotations := map[string]string{}
	if meta != nil {
		for k, v := range meta.Labels {
			labels[k] = v
		}
		for k, v := range meta.Annotations {
			annotations[k] = v
		}
	}
	labels[labelManagedBy] = managedByValue
	labels[labelNamespace] = doc.NamespaceID
	labels[labelConfiguration] = doc.ID
	annotations[annotationNamespaceID] = doc.NamespaceID
	annotations[cfgAnnotationID] = doc.ID
	annotations[cfgAnnotationKind] = doc.Kind
	annotations[cfgAnnotationGeneration] = strconv.FormatInt(doc.Generation, 10)
	annotations[cfgAnnotationCreatedAt] = doc.CreatedAt.UTC().Format(time.RFC3339Nano)
	metadata := kube.Object{"name": configurationConfigMapName(doc.ID), "namespace": namespace, "labels": labels, "annotations": annotations}
	if meta != nil {
		metadata["uid"] = meta.UID
		metadata["resourceVersion"] = meta.ResourceVersion
	}
	return kube.Object{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata,
		"data": map[string]string{configurationDataKey: string(data)},
	}
}

// ownedDocument proves that v is the ConfigMap of ref in ns and returns its document: every
// label and annotation, the single data key and the document's own identity must agree.
func ownedDocument(v configMapView, ns *tenantNamespace, ref driver.ConfigurationRef) (driver.ConfigurationDocument, bool) {
	m := v.Metadata
	if m.Name != configurationConfigMapName(ref.ID) || m.Namespace != ns.Name || m.Terminating() ||
		!(owner{namespaceID: ref.NamespaceID}).owns(m) || m.Labels[labelConfiguration] != ref.ID ||
		m.Annotations[cfgAnnotationID] != ref.ID || m.Annotations[cfgAnnotationKind] != driver.ConfigurationKindAgent ||
		!generationPattern.MatchString(m.Annotations[cfgAnnotationGeneration]) ||
		len(v.Data) != 1 || len(v.BinaryData) != 0 {
		return driver.ConfigurationDocument{}, false
	}
	raw, ok := v.Data[configurationDataKey]
	if !ok {
		return driver.ConfigurationDocument{}, false
	}
	created, err := time.Parse(time.RFC3339Nano, m.Annotations[cfgAnnotationCreatedAt])
	if err != nil {
		return driver.ConfigurationDocument{}, false
	}
	generation, _ := strconv.ParseInt(m.Annotations[cfgAnnotationGeneration], 10, 64)
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	var doc driver.ConfigurationDocument
	if err := dec.Decode(&doc); err != nil || dec.More() {
		return driver.ConfigurationDocument{}, false
	}
	values := bytes.TrimSpace(doc.Values)
	if doc.ID != ref.ID || doc.NamespaceID != ref.NamespaceID || doc.Kind != driver.ConfigurationKindAgent ||
		doc.Generation != generation || !doc.CreatedAt.Equal(created) || len(values) == 0 || values[0] != '{' {
		return driver.ConfigurationDocument{}, false
	}
	return doc, true
}

// read returns the owned document of ref with the object it came from. A missing object, or one
// that is not provably this Configuration's, is ErrConfigurationNotFound: never substituted.
func (c *Configurations) read(ctx context.Context, ref driver.ConfigurationRef) (driver.ConfigurationDocument, configMapView, *tenantNamespace, error) {
	var v configMapView
	if !validPlatformID("ns", ref.NamespaceID) || !validPlatformID("cfg", ref.ID) {
		return driver.ConfigurationDocument{}, v, nil, errInvalidReference
	}
	ns, err := c.placement(ctx, ref.NamespaceID)
	if err != nil {
		return driver.ConfigurationDocument{}, v, nil, err
	}
	if err := c.client.Get(ctx, kube.ConfigMaps.Path(ns.Name, configurationConfigMapName(ref.ID)), &v); err != nil {
		if kube.IsNotFound(err) {
			return driver.ConfigurationDocument{}, v, ns, driver.ErrConfigurationNotFound
		}
		return driver.ConfigurationDocument{}, v, ns, storageError(err, false)
	}
	doc, ok := ownedDocument(v, ns, ref)
	if !ok {
		return driver.ConfigurationDocument{}, v, ns, driver.ErrConfigurationNotFound
	}
	return doc, v, ns, nil
}

// Create implements driver.Configuration. A retry that finds its own identical ConfigMap succeeds;
// any other object under the name is an ownership failure.
func (c *Configurations) Create(ctx context.Context, doc driver.ConfigurationDocument) (driver.ConfigurationDocument, error) {
	if err := checkDocument(doc); err != nil {
		return driver.ConfigurationDocument{}, err
	}
	if err := c.Validate(ctx, doc); err != nil {
		return driver.ConfigurationDocument{}, err
	}
	data, _ := encodeConfiguration(doc) // Validate proved it encodes
	ns, err := c.placement(ctx, doc.NamespaceID)
	if err != nil {
		return driver.ConfigurationDocument{}, err
	}
	obj := configMapObject(doc, ns.Name, data, nil)
	err = c.client.Create(ctx, kube.ConfigMaps.Path(ns.Name, ""), obj, nil)
	if err == nil {
		return doc, nil
	}
	if !kube.IsConflict(err) {
		return driver.ConfigurationDocument{}, storageError(err, true)
	}
	name := configurationConfigMapName(doc.ID)
	var v configMapView
	if err := c.client.Get(ctx, kube.ConfigMaps.Path(ns.Name, name), &v); err != nil {
		return driver.ConfigurationDocument{}, storageError(err, false)
	}
	if _, ok := ownedDocument(v, ns, doc.Ref()); !ok || v.Data[configurationDataKey] != string(data) {
		return driver.ConfigurationDocument{}, ownershipError("ConfigMap", name)
	}
	return doc, nil
}

// Read implements driver.Configuration; ownership is re-verified on every read.
func (c *Configurations) Read(ctx context.Context, ref driver.ConfigurationRef) (driver.ConfigurationDocument, error) {
	doc, _, _, err := c.read(ctx, ref)
	return doc, err
}

// Update implements driver.Configuration: read with ownership, keep kind and creation time, move
// the generation by exactly one (−1 is OCC's rollback), then replace guarded by resourceVersion.
func (c *Configurations) Update(ctx context.Context, doc driver.ConfigurationDocument) (driver.ConfigurationDocument, error) {
	if err := checkDocument(doc); err != nil {
		return driver.ConfigurationDocument{}, err
	}
	if err := c.Validate(ctx, doc); err != nil {
		return driver.ConfigurationDocument{}, err
	}
	data, _ := encodeConfiguration(doc)
	old, v, ns, err := c.read(ctx, doc.Ref())
	if err != nil {
		return driver.ConfigurationDocument{}, err
	}
	step := doc.Generation - old.Generation
	if old.Kind != doc.Kind || !old.CreatedAt.Equal(doc.CreatedAt) || (step != 1 && step != -1) {
		return driver.ConfigurationDocument{}, &driver.PermanentError{Code: CodeConfigurationUpdateRefused,
			Reason: "A Configuration update must keep its kind and creation time and move its generation by exactly one."}
	}
	obj := configMapObject(doc, ns.Name, data, &v.Metadata)
	var out configMapView
	if err := c.client.Update(ctx, kube.ConfigMaps.Path(ns.Name, v.Metadata.Name), obj, &out); err != nil {
		if kube.IsNotFound(err) {
			return driver.ConfigurationDocument{}, driver.ErrConfigurationNotFound
		}
		return driver.ConfigurationDocument{}, storageError(err, true)
	}
	if out.Metadata.UID != v.Metadata.UID {
		return driver.ConfigurationDocument{}, ownershipError("ConfigMap", v.Metadata.Name)
	}
	return doc, nil
}

// Delete implements driver.Configuration: only the owned object, with its UID and resourceVersion
// as preconditions. An absent object (or namespace) is success; a foreign one is refused.
func (c *Configurations) Delete(ctx context.Context, ref driver.ConfigurationRef) error {
	if !validPlatformID("ns", ref.NamespaceID) || !validPlatformID("cfg", ref.ID) {
		return errInvalidReference
	}
	ns, err := findTenantNamespace(ctx, c.client, ref.NamespaceID)
	if err != nil {
		return err
	}
	if ns == nil || !ns.Active {
		return nil // no namespace holds it, or the namespace's deletion removes it
	}
	name := configurationConfigMapName(ref.ID)
	var v configMapView
	if err := c.client.Get(ctx, kube.ConfigMaps.Path(ns.Name, name), &v); err != nil {
		if kube.IsNotFound(err) {
			return nil
		}
		return storageError(err, false)
	}
	if v.Metadata.Terminating() {
		return nil
	}
	if _, ok := ownedDocument(v, ns, ref); !ok {
		return ownershipError("ConfigMap", name)
	}
	if err := c.client.Delete(ctx, kube.ConfigMaps.Path(ns.Name, name), v.Metadata.UID, v.Metadata.ResourceVersion); err != nil {
		if kube.IsNotFound(err) {
			return nil
		}
		return storageError(err, true)
	}
	return nil
}
