package supervise

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// A supervisor serves tasks one after another on its control socket (a
// Unix stream socket, fd 3 of the supervisor): loading a program costs
// milliseconds of CPU on every service start, most of it Go's runtime
// starting, so one supervisor runs many services in turn. A task is its
// encoded length (4 bytes, big-endian) and the encoded Task, sent with the
// files its command runs with (SCM_RIGHTS): stdin, stdout, stderr, the
// status pipe, and with -tty the terminal. Once the command's processes
// are gone and its status written, the supervisor closes every file of the
// task and writes Ready when it can take another; otherwise it exits.

// Ready is the byte a supervisor writes on its control socket when it
// waits for its next task.
const Ready = 'r'

// controlFD is the supervisor's end of its control socket.
const controlFD = 3

// maxTaskBytes bounds a task (arguments and environment: the kernel's
// exec takes at most a few MB of them).
const maxTaskBytes = 64 << 20

// Files the command of a task runs with, in their order on the wire.
const (
	fileStdin = iota
	fileStdout
	fileStderr
	fileStatus
	fileTTY // with -tty only
)

// SendTask sends t and its files (stdin, stdout, stderr, status[, tty]) on
// ctl, the agent's end of a supervisor's control socket, a non-blocking
// socket os.NewFile made.
func SendTask(ctl *os.File, t Task, files ...*os.File) error {
	if len(files) != fileTTY && len(files) != fileTTY+1 {
		return fmt.Errorf("task: %d files, want %d or %d", len(files), fileTTY, fileTTY+1)
	}
	body, err := t.MarshalBinary()
	if err != nil {
		return err
	}
	msg := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	msg = append(msg, body...)
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	rc, err := ctl.SyscallConn()
	if err != nil {
		return err
	}
	var n int
	var serr error
	// The files go with the first bytes; the rest of a long task follows
	// as plain writes.
	if err := rc.Write(func(fd uintptr) bool {
		n, serr = unix.SendmsgN(int(fd), msg, unix.UnixRights(fds...), nil, unix.MSG_NOSIGNAL)
		return !errors.Is(serr, unix.EAGAIN)
	}); err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	_, err = ctl.Write(msg[n:])
	return err
}
