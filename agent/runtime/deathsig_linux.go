package runtime

import "syscall"

// dieWithAgent asks the kernel to kill a service when the agent dies, even
// by SIGKILL: services do not survive the agent, and a restarted agent
// would not know them. (It covers the service's main process; what that
// forks lives in its process group.)
func dieWithAgent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
