package runtime

import "syscall"

// dieWithAgent asks the kernel to send sig to a child when the agent dies,
// even by SIGKILL: SIGKILL for a service's own process, a signal the
// supervisor catches to kill the whole service.
func dieWithAgent(a *syscall.SysProcAttr, sig syscall.Signal) { a.Pdeathsig = sig }
