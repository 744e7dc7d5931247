//go:build tools

// The main packages this module builds; the build tag keeps them out of any compile while `go mod
// tidy` still records their dependencies.
package kube

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
