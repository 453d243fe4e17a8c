package e2e

import (
	"fmt"
	"io"
)

// The relay's exec streams carry terminal frames, a public protocol
// (README, "Sandboxes"): a type byte, a 3-byte big-endian length, the
// payload. The tests speak it as any client
// would, from this description rather than the server's code.
const (
	frameStdin      byte = 1
	frameStdout     byte = 2
	frameStderr     byte = 3
	frameCloseStdin byte = 6
	frameExit       byte = 7 // a big-endian int32
	frameError      byte = 8

	maxFramePayload = 32 << 10
)

func writeFrame(w io.Writer, typ byte, p []byte) error {
	b := make([]byte, 4+len(p))
	b[0], b[1], b[2], b[3] = typ, byte(len(p)>>16), byte(len(p)>>8), byte(len(p))
	copy(b[4:], p)
	_, err := w.Write(b)
	return err
}

func readFrame(r io.Reader, buf []byte) (byte, []byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := int(h[1])<<16 | int(h[2])<<8 | int(h[3])
	if n > len(buf) {
		return 0, nil, fmt.Errorf("a frame of %d bytes, more than %d", n, len(buf))
	}
	if _, err := io.ReadFull(r, buf[:n]); err != nil {
		return 0, nil, err
	}
	return h[0], buf[:n], nil
}

func parseExit(p []byte) (int, error) {
	if len(p) != 4 {
		return 0, fmt.Errorf("an exit frame of %d bytes", len(p))
	}
	return int(int32(uint32(p[0])<<24 | uint32(p[1])<<16 | uint32(p[2])<<8 | uint32(p[3]))), nil
}
