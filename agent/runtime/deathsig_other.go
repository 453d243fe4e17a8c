//go:build !linux

package runtime

import "syscall"

// dieWithAgent has no portable equivalent outside Linux.
func dieWithAgent(*syscall.SysProcAttr, syscall.Signal) {}
