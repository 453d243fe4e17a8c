package wire

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The stream tunnel is a second WebSocket an agent keeps open
// (GET /agent/streams) carrying a yamux session: the server opens one
// stream per relayed connection or terminal, so bulk bytes never queue
// behind the job messages of the first WebSocket, and yamux's per-stream
// windows keep a slow reader from stalling the others. Each stream starts
// with a StreamOpen from the server and a StreamReply from the agent, each
// one header (a 4-byte big-endian length and JSON); then a TCP stream
// carries raw bytes both ways, and a terminal carries frames
// (WriteFrame/ReadFrame).

// Stream kinds.
const (
	StreamTCP    = "tcp"    // a connection to a port of a service
	StreamExec   = "exec"   // a command run in a service
	StreamAttach = "attach" // the terminal of a service started with TTY
)

// MaxHeaderBytes bounds a stream header.
const MaxHeaderBytes = 64 << 10

// MaxExecWords bounds an exec command's words.
const MaxExecWords = 256

// StreamOpen is the server's first message on a stream.
type StreamOpen struct {
	Kind    string `json:"kind"`
	JobID   string `json:"jobId"`
	Attempt int    `json:"attempt"`
	Service string `json:"service"`
	// Port is the host port the service got (StreamTCP): the agent dials
	// it only if it belongs to that running service.
	Port int `json:"port,omitempty"`
	// Command is the exec's argv (StreamExec).
	Command []string `json:"command,omitempty"`
	TTY     bool     `json:"tty,omitempty"` // StreamExec: a pseudo-terminal
	Rows    uint16   `json:"rows,omitempty"`
	Cols    uint16   `json:"cols,omitempty"`
	// Image is the reference to commit the service's container to
	// (StreamCommit).
	Image string `json:"image,omitempty"`
}

// Validate checks what the agent acts on.
func (o StreamOpen) Validate() error {
	var errs []string
	switch o.Kind {
	case StreamTCP:
		if o.Port < 1 || o.Port > 65535 {
			errs = append(errs, fmt.Sprintf("port %d is not between 1 and 65535", o.Port))
		}
	case StreamExec:
		if len(o.Command) == 0 || len(o.Command) > MaxExecWords {
			errs = append(errs, fmt.Sprintf("an exec needs 1 to %d command words", MaxExecWords))
		}
		for _, w := range o.Command {
			if err := CheckWord(w); err != nil {
				errs = append(errs, "command: "+err.Error())
				break
			}
		}
	case StreamAttach:
	case StreamCommit:
		if o.Image == "" || len(o.Image) > 256 {
			errs = append(errs, "a commit needs an image reference (at most 256 bytes)")
		}
	default:
		errs = append(errs, fmt.Sprintf("unknown stream kind %.20q", o.Kind))
	}
	if o.JobID == "" || len(o.JobID) > 64 {
		errs = append(errs, "jobId is required (at most 64 bytes)")
	}
	if err := CheckServiceName(o.Service); err != nil {
		errs = append(errs, "service: "+err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: stream open: %v", ErrInvalid, errs)
	}
	return nil
}

// StreamReply is the agent's answer to a StreamOpen. An empty Error means
// the stream is connected.
type StreamReply struct {
	Error string `json:"error,omitempty"`
	// Code is NOT_FOUND (no such running service or port),
	// BAD_USER_INPUT (e.g. attach to a service without TTY, a command
	// that does not exist) or UNAVAILABLE (the port refused the
	// connection).
	Code string `json:"code,omitempty"`
}

// WriteHeader writes v as one header.
func WriteHeader(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding stream header: %w", err)
	}
	if len(b) > MaxHeaderBytes {
		return fmt.Errorf("%w: stream header of %d bytes", ErrTooLarge, len(b))
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

// ReadHeader reads one header into v.
func ReadHeader(r io.Reader, v any) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return fmt.Errorf("reading stream header: %w", err)
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > MaxHeaderBytes {
		return fmt.Errorf("%w: stream header of %d bytes", ErrTooLarge, size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return fmt.Errorf("reading stream header: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: stream header: %v", ErrInvalid, err)
	}
	return nil
}

// Frame types of a terminal stream. The client's side sends Stdin,
// Resize, Signal and CloseStdin; the process's side Stdout, Stderr and,
// last, Exit.
const (
	FrameStdin      byte = 1
	FrameStdout     byte = 2
	FrameStderr     byte = 3
	FrameResize     byte = 4 // rows, cols: two big-endian uint16
	FrameSignal     byte = 5 // the signal's number, one byte (exec without TTY)
	FrameCloseStdin byte = 6 // end of input
	FrameExit       byte = 7 // the exit code, big-endian int32; the stream ends after it
	FrameError      byte = 8 // why the terminal ended without an exit code (UTF-8)
)

// MaxFramePayload bounds one frame's payload.
const MaxFramePayload = 32 << 10

// ErrBadFrame is a frame a peer may not send.
var ErrBadFrame = errors.New("bad terminal frame")

// WriteFrame writes one frame: type, 3-byte big-endian length, payload.
func WriteFrame(w io.Writer, typ byte, payload []byte) error {
	if len(payload) > MaxFramePayload {
		return fmt.Errorf("%w: %d bytes of payload, at most %d", ErrBadFrame, len(payload), MaxFramePayload)
	}
	buf := make([]byte, 4+len(payload))
	buf[0] = typ
	buf[1], buf[2], buf[3] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	copy(buf[4:], payload)
	_, err := w.Write(buf)
	return err
}

// ReadFrame reads one frame into buf (grown when needed) and returns its
// type and payload, which is valid until the next call.
func ReadFrame(r io.Reader, buf []byte) (byte, []byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := int(h[1])<<16 | int(h[2])<<8 | int(h[3])
	if h[0] < FrameStdin || h[0] > FrameError {
		return 0, nil, fmt.Errorf("%w: unknown type %d", ErrBadFrame, h[0])
	}
	if n > MaxFramePayload {
		return 0, nil, fmt.Errorf("%w: %d bytes of payload, at most %d", ErrBadFrame, n, MaxFramePayload)
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, fmt.Errorf("%w: cut short: %v", ErrBadFrame, io.ErrUnexpectedEOF)
	}
	return h[0], buf, nil
}

// ResizePayload and ParseResize encode a FrameResize.
func ResizePayload(rows, cols uint16) []byte {
	return []byte{byte(rows >> 8), byte(rows), byte(cols >> 8), byte(cols)}
}

// ParseResize decodes a FrameResize payload.
func ParseResize(p []byte) (rows, cols uint16, err error) {
	if len(p) != 4 {
		return 0, 0, fmt.Errorf("%w: resize of %d bytes", ErrBadFrame, len(p))
	}
	return uint16(p[0])<<8 | uint16(p[1]), uint16(p[2])<<8 | uint16(p[3]), nil
}

// ExitPayload and ParseExit encode a FrameExit.
func ExitPayload(code int) []byte {
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, uint32(int32(code)))
	return b
}

// ParseExit decodes a FrameExit payload.
func ParseExit(p []byte) (int, error) {
	if len(p) != 4 {
		return 0, fmt.Errorf("%w: exit of %d bytes", ErrBadFrame, len(p))
	}
	return int(int32(binary.BigEndian.Uint32(p))), nil
}
