package runtime

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// defaultSize is a new terminal's size when none is asked for: a size of
// 0x0 confuses programs that lay out their output.
var defaultSize = Size{Rows: 24, Cols: 80}

// openPTY opens a pseudo-terminal of size (defaultSize when zero). The
// master stays with the agent; the slave is for the process, and belongs
// to u (nil: the agent's user), as login gives a user their terminal, so
// that programs opening it by name (ttyname) may.
func openPTY(size Size, u *jobUser) (master, slave *os.File, err error) {
	m, sl, err := pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("opening a pseudo-terminal: %w", err)
	}
	if master, err = pollable(m); err != nil {
		_ = sl.Close()
		return nil, nil, fmt.Errorf("opening a pseudo-terminal: %w", err)
	}
	if size.Rows == 0 || size.Cols == 0 {
		size = defaultSize
	}
	if err = setSize(master, size); err == nil && u != nil {
		err = sl.Chown(int(u.uid), int(u.gid))
	}
	if err != nil {
		closeAll(master, sl)
		return nil, nil, fmt.Errorf("setting up a pseudo-terminal: %w", err)
	}
	return master, sl, nil
}

// pollable is a new descriptor for f in non-blocking mode, f closed: pty
// puts its master in blocking mode (File.Fd), where a read can be neither
// given a deadline nor ended by Close.
func pollable(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	name := f.Name()
	_ = f.Close()
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil // non-blocking: the poller's
}

// dupPollable is another descriptor of the pollable f, closed apart from
// it (a close ends only the reads and writes on it).
func dupPollable(f *os.File) (*os.File, error) {
	var fd int
	var err error
	if cerr := control(f, func(raw int) { fd, err = unix.FcntlInt(uintptr(raw), unix.F_DUPFD_CLOEXEC, 0) }); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// setSize sets the window size of the terminal whose master (or a
// duplicate of it) is f; its foreground processes get SIGWINCH.
func setSize(f *os.File, size Size) error {
	var err error
	if cerr := control(f, func(fd int) {
		err = unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols})
	}); cerr != nil {
		return cerr
	}
	return err
}

// foreground is the foreground process group of the terminal whose
// master is f: where a typed Ctrl-C goes.
func foreground(f *os.File) (int, error) {
	var pgrp int
	var err error
	if cerr := control(f, func(fd int) { pgrp, err = unix.IoctlGetInt(fd, unix.TIOCGPGRP) }); cerr != nil {
		return 0, cerr
	}
	return pgrp, err
}

// control runs fn on f's descriptor without putting it in blocking mode
// (as File.Fd would).
func control(f *os.File, fn func(fd int)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { fn(int(fd)) })
}

// masterReader reads a pseudo-terminal's master: EIO, which says that no
// process holds the slave any more, is its end of file.
type masterReader struct{ r io.Reader }

func (m masterReader) Read(b []byte) (int, error) {
	n, err := m.r.Read(b)
	if errors.Is(err, syscall.EIO) {
		err = io.EOF
	}
	return n, err
}
