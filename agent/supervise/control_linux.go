package supervise

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// taskFiles are the files of the task under way; nil where not sent.
type taskFiles [fileTTY + 1]*os.File

func (f *taskFiles) close() {
	for i, file := range f {
		if file != nil {
			_ = file.Close()
			f[i] = nil
		}
	}
}

// receiveTask waits for the next task on the control socket: io.EOF when
// the agent closed it.
func receiveTask() (Task, taskFiles, error) {
	var files taskFiles
	hdr := make([]byte, 4)
	oob := make([]byte, unix.CmsgSpace(4*len(files)))
	n, oobn, _, _, err := unix.Recvmsg(controlFD, hdr, oob, unix.MSG_CMSG_CLOEXEC)
	for errors.Is(err, unix.EINTR) {
		n, oobn, _, _, err = unix.Recvmsg(controlFD, hdr, oob, unix.MSG_CMSG_CLOEXEC)
	}
	if err != nil {
		return Task{}, files, fmt.Errorf("reading the task: %w", err)
	}
	if n == 0 {
		return Task{}, files, io.EOF
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if rights, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, rights...)
			}
		}
	}
	for i, fd := range fds {
		if i >= len(files) {
			_ = unix.Close(fd)
			continue
		}
		files[i] = os.NewFile(uintptr(fd), "task")
	}
	if len(fds) < fileTTY || len(fds) > len(files) {
		return Task{}, files, fmt.Errorf("task: %d files", len(fds))
	}
	if err := readFull(hdr[n:]); err != nil {
		return Task{}, files, err
	}
	size := binary.BigEndian.Uint32(hdr)
	if size > maxTaskBytes {
		return Task{}, files, fmt.Errorf("task: %d bytes", size)
	}
	body := make([]byte, size)
	if err := readFull(body); err != nil {
		return Task{}, files, err
	}
	var t Task
	if err := t.UnmarshalBinary(body); err != nil {
		return Task{}, files, err
	}
	return t, files, nil
}

// readFull reads len(b) bytes from the control socket.
func readFull(b []byte) error {
	for len(b) > 0 {
		n, err := unix.Read(controlFD, b)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("reading the task: %w", err)
		case n == 0:
			return fmt.Errorf("reading the task: %w", io.ErrUnexpectedEOF)
		}
		b = b[n:]
	}
	return nil
}
