package kubernetes

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strconv"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
)

// Namespace-level objects every tenant namespace holds.
const (
	tenantQuotaName          = "openclaw-quota"
	tenantLimitRangeName     = "openclaw-limits"
	tenantPolicyDefaultDeny  = "default-deny"
	tenantPolicyAllowDNS     = "allow-dns"
	tenantPolicyGatewayInput = "allow-gateway-ingress"
)

// tenantPolicyNames are the namespace-level NetworkPolicies; prepareRevision waits for them.
var tenantPolicyNames = []string{tenantPolicyDefaultDeny, tenantPolicyAllowDNS, tenantPolicyGatewayInput}

// Pod Security Admission labels; tenant namespaces run at "restricted" in all three modes.
var psaLabels = []string{
	"pod-security.kubernetes.io/enforce",
	"pod-security.kubernetes.io/audit",
	"pod-security.kubernetes.io/warn",
}

// Fixed reasons of Namespace observations. They carry no server text.
const (
	reasonAPIUnreachable       = "The Kubernetes API server is unreachable."
	reasonEnsureFailed         = "Namespace preparation failed."
	reasonDeleteFailed         = "Namespace teardown failed."
	reasonRoleBindingsPending  = "The worker may not manage the tenant namespace yet: its RoleBindings are not bound."
	reasonNamespaceNotActive   = "The Kubernetes namespace is not active yet."
	reasonNamespaceTerminating = "The Kubernetes namespace is still terminating."
	reasonAdoptionRaced        = "The existing Kubernetes namespace changed while it was being claimed."
)

// namespaceNamePattern is a Kubernetes namespace name (RFC 1123 label).
var namespaceNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// EnsureNamespace implements driver.Compute: place the tenant namespace (a managed
// oce-<hash> namespace, or the operator's existingNamespace after its checks), then apply the
// quota, the limit range and the namespace NetworkPolicies. A 403 inside an Active tenant
// namespace is pending, not a failure: the operator binds the worker's RoleBindings there after
// the namespace exists.
func (d *Compute) EnsureNamespace(ctx context.Context, ns driver.Namespace) (driver.NamespaceObservation, error) {
	if err := ctx.Err(); err != nil {
		return driver.NamespaceObservation{}, err
	}
	tn, pending, err := d.placeNamespace(ctx, ns)
	if err == nil && pending == "" {
		err = d.prepareNamespaceInfrastructure(ctx, ns.ID, tn.Name)
		if kube.IsForbidden(err) {
			pending, err = reasonRoleBindingsPending, nil
		}
	}
	switch {
	case ctx.Err() != nil:
		return driver.NamespaceObservation{}, ctx.Err()
	case err != nil:
		return namespaceFailure(driver.NamespaceEnsureFailed, ns.ID, err, "preparation", reasonEnsureFailed), nil
	case pending != "":
		return driver.NamespacePending(ns.ID, pending), nil
	}
	return driver.NamespaceReady(ns.ID), nil
}

// placeNamespace returns the Active tenant namespace of ns, or a pending reason.
func (d *Compute) placeNamespace(ctx context.Context, ns driver.Namespace) (*tenantNamespace, string, error) {
	if ns.ExistingNamespace != nil {
		return d.adoptNamespace(ctx, ns.ID, *ns.ExistingNamespace)
	}
	found, err := findTenantNamespace(ctx, d.client, ns.ID)
	if err != nil {
		return nil, "", err
	}
	name := managedNamespaceName(ns.ID)
	switch {
	case found != nil && found.External:
		// Labelled for this Namespace by an operator, but the Namespace did not select it.
		return nil, "", &driver.PermanentError{Code: CodeOwnershipConflict, Reason: "Refusing external Kubernetes namespace " + found.Name + ": the Namespace does not select it as its existing namespace."}
	case found != nil:
		if found.Meta.Terminating() {
			return nil, reasonNamespaceTerminating, nil
		}
		name = found.Name // the current name or an accepted legacy one
	default:
		// Nothing is labelled for the Namespace; the managed name must be free or ours (a
		// concurrent ensure may have just created it). Apply would otherwise take over a
		// foreign namespace.
		var cur namespaceView
		err := d.client.Get(ctx, kube.Namespaces.Path("", name), &cur)
		switch {
		case kube.IsNotFound(err):
		case err != nil:
			return nil, "", err
		case !(owner{namespaceID: ns.ID}).owns(cur.Metadata):
			return nil, "", ownershipError("Namespace", name)
		case cur.Metadata.Terminating():
			return nil, reasonNamespaceTerminating, nil
		}
	}
	labels := map[string]string{labelGatewayNamespace: ns.ID}
	for _, l := range psaLabels {
		labels[l] = pssLevelRestricted
	}
	obj := kube.Object{"apiVersion": "v1", "kind": "Namespace", "metadata": owner{namespaceID: ns.ID}.metadata(name, "", labels)}
	var applied namespaceView
	if err := d.client.Apply(ctx, kube.Namespaces.Path("", name), obj, &applied); err != nil {
		return nil, "", err
	}
	tn := applied.tenant()
	if !tn.Active {
		return nil, reasonNamespaceNotActive, nil
	}
	return tn, "", nil
}

// adoptNamespace verifies the operator's existing namespace and claims it
// with the ownership label and annotation. Every refusal is permanent: only the operator can fix
// the namespace.
func (d *Compute) adoptNamespace(ctx context.Context, namespaceID, name string) (*tenantNamespace, string, error) {
	if !namespaceNamePattern.MatchString(name) {
		return nil, "", &driver.PermanentError{Code: CodeConfigurationInvalid, Reason: "The existing namespace is not a valid Kubernetes namespace name."}
	}
	// Unique claim: no other namespace may be labelled for this Namespace.
	var claimed struct {
		Items []namespaceView `json:"items"`
	}
	if err := d.client.List(ctx, kube.Namespaces.Path("", ""), kube.Selector(labelNamespace, namespaceID), &claimed); err != nil {
		return nil, "", classify(err)
	}
	for _, v := range claimed.Items {
		if v.Metadata.Name != name {
			return nil, "", &driver.PermanentError{Code: CodeOwnershipConflict, Reason: "Refusing existing namespace " + name + ": another Kubernetes namespace is already labelled for this Namespace."}
		}
	}
	for attempt := 0; ; attempt++ {
		var v namespaceView
		err := d.client.Get(ctx, kube.Namespaces.Path("", name), &v)
		if kube.IsNotFound(err) {
			return nil, "", &driver.PermanentError{Code: CodeConfigurationInvalid, Reason: "The existing namespace " + name + " does not exist."}
		}
		if err != nil {
			return nil, "", err
		}
		if err := checkAdoptable(namespaceID, name, v); err != nil {
			return nil, "", err
		}
		if err := d.checkNoForeignPolicies(ctx, namespaceID, name); err != nil {
			if kube.IsForbidden(err) {
				return nil, reasonRoleBindingsPending, nil
			}
			return nil, "", err
		}
		if v.Metadata.Labels[labelNamespace] == namespaceID && v.Metadata.Annotations[annotationNamespaceID] == namespaceID {
			return v.tenant(), "", nil
		}
		// The resourceVersion makes the patch fail with 409 if the namespace changed since the
		// checks above; the markers are only added, never forced over another value.
		patch := kube.Object{"metadata": kube.Object{
			"resourceVersion": v.Metadata.ResourceVersion,
			"labels":          kube.Object{labelNamespace: namespaceID},
			"annotations":     kube.Object{annotationNamespaceID: namespaceID},
		}}
		var patched namespaceView
		err = d.client.MergePatch(ctx, kube.Namespaces.Path("", name), patch, &patched)
		switch {
		case err == nil:
			return patched.tenant(), "", nil
		case kube.IsConflict(err) && attempt < 2:
			continue
		case kube.IsConflict(err):
			return nil, reasonAdoptionRaced, nil
		}
		return nil, "", err
	}
}

// checkAdoptable applies the operator-facing rules of an existing namespace.
func checkAdoptable(namespaceID, name string, v namespaceView) error {
	m := v.Metadata
	refuse := func(why string) error {
		return &driver.PermanentError{Code: CodeConfigurationInvalid, Reason: "The existing namespace " + name + " " + why}
	}
	switch {
	case m.Labels[labelManagedBy] == managedByValue:
		return ownershipError("Namespace", name) // a driver-managed namespace is never adopted
	case m.Labels[labelNamespace] != "" && m.Labels[labelNamespace] != namespaceID,
		m.Annotations[annotationNamespaceID] != "" && m.Annotations[annotationNamespaceID] != namespaceID:
		return ownershipError("Namespace", name) // claimed by another Namespace
	case m.Terminating() || v.Status.Phase != "Active":
		return refuse("is not Active.")
	case m.Annotations[annotationNamespaceLifecycle] != lifecycleExternal:
		return refuse("must be annotated " + annotationNamespaceLifecycle + ": " + lifecycleExternal + ".")
	}
	for _, l := range psaLabels {
		if m.Labels[l] != pssLevelRestricted {
			return refuse("must be labelled " + l + ": " + pssLevelRestricted + ".")
		}
	}
	return nil
}

// checkNoForeignPolicies refuses an existing namespace holding NetworkPolicies OCC does not own:
// they could open what the namespace policies close.
func (d *Compute) checkNoForeignPolicies(ctx context.Context, namespaceID, name string) error {
	var list struct {
		Items []struct {
			Metadata kube.Meta `json:"metadata"`
		} `json:"items"`
	}
	if err := d.client.List(ctx, kube.NetworkPolicies.Path(name, ""), "", &list); err != nil {
		return err
	}
	for _, p := range list.Items {
		if !(owner{namespaceID: namespaceID}).owns(p.Metadata) {
			return &driver.PermanentError{Code: CodeOwnershipConflict, Reason: "The existing namespace " + name + " holds NetworkPolicies OCC does not own."}
		}
	}
	return nil
}

// tenantObject is one namespace-level object every tenant namespace holds.
type tenantObject struct {
	kind     string
	resource kube.Resource
	name     string
	obj      kube.Object
}

// namespaceInfrastructure renders the namespace-level objects of namespaceID in namespace.
func (d *Compute) namespaceInfrastructure(namespaceID, namespace string) []tenantObject {
	o := owner{namespaceID: namespaceID}
	meta := func(name string) kube.Object { return o.metadata(name, namespace, nil) }
	profile := map[string]string{labelNetworkProfile: networkProfile}
	var dnsPorts []any
	for _, port := range []int{53, 5353} {
		for _, proto := range []string{"UDP", "TCP"} {
			dnsPorts = append(dnsPorts, kube.Object{"protocol": proto, "port": port})
		}
	}
	// An ingress rule without peers would admit every source: without clients there is no rule.
	ingress := []any{}
	if len(d.cfg.GatewayClients) > 0 {
		var from []any
		for _, p := range d.cfg.GatewayClients {
			from = append(from, peer(p))
		}
		ingress = append(ingress, kube.Object{"from": from, "ports": []any{kube.Object{"protocol": "TCP", "port": d.cfg.GatewayPort}}})
	}
	return []tenantObject{
		{"ResourceQuota", kube.ResourceQuotas, tenantQuotaName, kube.Object{
			"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta(tenantQuotaName),
			"spec": kube.Object{"hard": d.cfg.NamespaceQuota},
		}},
		{"LimitRange", kube.LimitRanges, tenantLimitRangeName, kube.Object{
			"apiVersion": "v1", "kind": "LimitRange", "metadata": meta(tenantLimitRangeName),
			"spec": kube.Object{"limits": []any{kube.Object{
				"type":           "Container",
				"default":        quantities(d.cfg.ContainerDefaults.Limits),
				"defaultRequest": quantities(d.cfg.ContainerDefaults.Requests),
			}}},
		}},
		{"NetworkPolicy", kube.NetworkPolicies, tenantPolicyDefaultDeny, kube.Object{
			"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta(tenantPolicyDefaultDeny),
			"spec": kube.Object{"podSelector": kube.Object{}, "policyTypes": []any{"Ingress", "Egress"}},
		}},
		{"NetworkPolicy", kube.NetworkPolicies, tenantPolicyAllowDNS, kube.Object{
			"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta(tenantPolicyAllowDNS),
			"spec": kube.Object{
				"podSelector": kube.Object{"matchLabels": profile},
				"policyTypes": []any{"Egress"},
				"egress":      []any{kube.Object{"to": []any{peer(d.cfg.DNS)}, "ports": dnsPorts}},
			},
		}},
		{"NetworkPolicy", kube.NetworkPolicies, tenantPolicyGatewayInput, kube.Object{
			"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta(tenantPolicyGatewayInput),
			"spec": kube.Object{
				"podSelector": kube.Object{"matchLabels": map[string]string{labelNetworkProfile: networkProfile, labelWorkloadRole: roleGateway}},
				"policyTypes": []any{"Ingress"},
				"ingress":     ingress,
			},
		}},
	}
}

// peer renders a NetworkPolicy peer: pods with the labels in the namespace with the name.
func peer(p Peer) kube.Object {
	labels := p.PodLabels
	if labels == nil {
		labels = map[string]string{}
	}
	return kube.Object{
		"namespaceSelector": kube.Object{"matchLabels": map[string]string{labelMetadataName: p.Namespace}},
		"podSelector":       kube.Object{"matchLabels": labels},
	}
}

func quantities(q Quantities) map[string]string {
	m := map[string]string{}
	if q.CPU != "" {
		m["cpu"] = q.CPU
	}
	if q.Memory != "" {
		m["memory"] = q.Memory
	}
	return m
}

// prepareNamespaceInfrastructure applies the namespace-level objects. An existing object of the
// same name must be ours: apply would otherwise merge our fields into someone else's object.
// Raw client errors are returned so that the caller can tell a 403 apart.
func (d *Compute) prepareNamespaceInfrastructure(ctx context.Context, namespaceID, namespace string) error {
	o := owner{namespaceID: namespaceID}
	for _, t := range d.namespaceInfrastructure(namespaceID, namespace) {
		var cur struct {
			Metadata kube.Meta `json:"metadata"`
		}
		err := d.client.Get(ctx, t.resource.Path(namespace, t.name), &cur)
		switch {
		case kube.IsNotFound(err):
		case err != nil:
			return err
		case !o.owns(cur.Metadata):
			return ownershipError(t.kind, t.name)
		}
		if err := d.client.Apply(ctx, t.resource.Path(namespace, t.name), t.obj, nil); err != nil {
			return err
		}
	}
	return nil
}

// DeleteNamespace implements driver.Compute. A managed namespace
// is deleted with a UID precondition (its Pods, Deployments and other objects go with it) and
// reported deleted once a re-read no longer finds it. An external (operator-owned) namespace is
// never deleted: only the driver's quota, limit range and NetworkPolicies are removed; the
// namespace, its markers and the operator's RoleBindings stay.
func (d *Compute) DeleteNamespace(ctx context.Context, ns driver.Namespace) (driver.NamespaceObservation, error) {
	if err := ctx.Err(); err != nil {
		return driver.NamespaceObservation{}, err
	}
	pending, err := d.deleteNamespace(ctx, ns)
	switch {
	case ctx.Err() != nil:
		return driver.NamespaceObservation{}, ctx.Err()
	case err != nil:
		return namespaceFailure(driver.NamespaceDeleteFailed, ns.ID, err, "teardown", reasonDeleteFailed), nil
	case pending != "":
		return driver.NamespaceDeleting(ns.ID, pending), nil
	}
	return driver.NamespaceDeleted(ns.ID), nil
}

// deleteNamespace returns "" when the Namespace's infrastructure is gone, else a pending reason.
func (d *Compute) deleteNamespace(ctx context.Context, ns driver.Namespace) (string, error) {
	var tn *tenantNamespace
	if ns.ExistingNamespace != nil {
		name := *ns.ExistingNamespace
		if !namespaceNamePattern.MatchString(name) {
			return "", nil // never adopted: nothing of ours can be there
		}
		var v namespaceView
		err := d.client.Get(ctx, kube.Namespaces.Path("", name), &v)
		if kube.IsNotFound(err) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		m := v.Metadata
		if (m.Labels[labelNamespace] != "" && m.Labels[labelNamespace] != ns.ID) || m.Labels[labelManagedBy] == managedByValue {
			return "", ownershipError("Namespace", name)
		}
		tn = v.tenant()
		tn.External = true // selected by the operator: never deleted, whatever its annotations say
	} else {
		found, err := findTenantNamespace(ctx, d.client, ns.ID)
		if err != nil || found == nil {
			return "", err
		}
		tn = found
	}
	if tn.Meta.Terminating() {
		return reasonNamespaceTerminating, nil
	}
	if tn.External {
		return "", d.removeNamespaceInfrastructure(ctx, ns.ID, tn.Name)
	}
	err := d.client.Delete(ctx, kube.Namespaces.Path("", tn.Name), tn.UID, "")
	if err != nil && !kube.IsNotFound(err) && !kube.IsConflict(err) {
		return "", err // a 409 is a failed UID precondition: the re-read below decides
	}
	again, err := findTenantNamespace(ctx, d.client, ns.ID)
	if err != nil {
		return "", err
	}
	if again != nil {
		return reasonNamespaceTerminating, nil
	}
	return "", nil
}

// removeNamespaceInfrastructure deletes the driver's objects from an external namespace: the quota
// and limit range by name, and every NetworkPolicy labelled and annotated for the Namespace (the
// namespace policies and any Agent policy left behind). Objects it does not own are left alone.
func (d *Compute) removeNamespaceInfrastructure(ctx context.Context, namespaceID, namespace string) error {
	type item struct {
		Metadata kube.Meta `json:"metadata"`
	}
	type target struct {
		resource kube.Resource
		meta     kube.Meta
	}
	var targets []target
	for _, r := range []struct {
		resource kube.Resource
		name     string
	}{{kube.ResourceQuotas, tenantQuotaName}, {kube.LimitRanges, tenantLimitRangeName}} {
		var cur item
		err := d.client.Get(ctx, r.resource.Path(namespace, r.name), &cur)
		if kube.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		targets = append(targets, target{r.resource, cur.Metadata})
	}
	var policies struct {
		Items []item `json:"items"`
	}
	if err := d.client.List(ctx, kube.NetworkPolicies.Path(namespace, ""), kube.Selector(labelManagedBy, managedByValue, labelNamespace, namespaceID), &policies); err != nil {
		return err
	}
	for _, p := range policies.Items {
		targets = append(targets, target{kube.NetworkPolicies, p.Metadata})
	}
	o := owner{namespaceID: namespaceID}
	for _, t := range targets {
		if !o.owns(t.meta) {
			continue
		}
		err := d.client.Delete(ctx, t.resource.Path(namespace, t.meta.Name), t.meta.UID, t.meta.ResourceVersion)
		if err != nil && !kube.IsNotFound(err) {
			return err // 409: changed since read; the next pass reads it again
		}
	}
	return nil
}

// namespaceFailure builds the failure observation of err: the class comes from classifyNamespace
// (HTTP 400/401/403/422, ownership and configuration are permanent, the rest retryable) and the
// reason from the driver's own sentences only.
func namespaceFailure(build func(string, error) driver.NamespaceObservation, namespaceID string, err error, op, fallback string) driver.NamespaceObservation {
	obs := build(namespaceID, classifyNamespace(err))
	obs.Reason = driver.SanitizeReason(namespaceFailureReason(err, op, fallback))
	return obs
}

func namespaceFailureReason(err error, op, fallback string) string {
	var (
		te        *kube.TransportError
		ae        *kube.APIError
		transient *driver.TransientDependencyError
		permanent *driver.PermanentError
		retryable *driver.RetryableError
	)
	httpStatus := func(status int) string {
		return "A Namespace " + op + " request failed with HTTP status " + strconv.Itoa(status) + "."
	}
	switch {
	case errors.As(err, &te):
		return reasonAPIUnreachable
	case errors.As(err, &ae):
		if ae.Status >= http.StatusOK && ae.Status < http.StatusMultipleChoices {
			return fallback // an answer that was not the expected JSON
		}
		return httpStatus(ae.Status)
	case errors.As(err, &transient):
		if transient.Status != 0 {
			return httpStatus(transient.Status)
		}
		return reasonAPIUnreachable
	case errors.As(err, &permanent):
		return permanent.Reason
	case errors.As(err, &retryable):
		return retryable.Reason
	}
	return fallback
}
