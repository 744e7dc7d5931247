//go:build !linux

package devstack

import "syscall"

// procAttr puts a child in its own process group. Outside Linux there is no parent-death signal:
// a killed occ dev leaves its children running until they are stopped by hand.
func procAttr(cred *syscall.Credential, _ syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setpgid: true}
}
