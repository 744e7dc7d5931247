package devstack

import "syscall"

// procAttr puts a child in its own process group (a terminal's Ctrl-C reaches occ dev only, which
// stops the children in order) and sends it deathSignal if occ dev dies first.
func procAttr(cred *syscall.Credential, deathSignal syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: deathSignal}
}
