// Package kube pins the Kubernetes control-plane binaries (etcd, kube-apiserver,
// kube-controller-manager) that the Kubernetes driver tests run on loopback. It is a separate module
// so that the project's own go.mod does not take on k8s.io/kubernetes; build.sh builds the binaries.
package kube
