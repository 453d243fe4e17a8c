//go:build !linux

package docker

import (
	"errors"
	"syscall"
)

// hostProcess: signalling an exec'd process from the host needs Linux.
type hostProcess struct{}

func openHostProcess(int, string) (*hostProcess, error) {
	return nil, errors.New("signalling an exec'd process needs a Linux agent")
}

func (*hostProcess) signal(syscall.Signal) error { return nil }
func (*hostProcess) kill() error                 { return nil }
func (*hostProcess) release()                    {}
