// Package helmtest renders the OCC Helm chart with the Helm Go SDK and applies the result to a real
// kube-apiserver with a server-side dry run. It is a separate module so that the project's own
// module does not take on Helm and client-go; `make test` runs it after the main module's tests.
package helmtest
