package wire

import (
	"fmt"
	"time"
)

// Files of a node storage live on the node's disk; the server reaches them
// through the tunnel. An operation is a FileOp from the server, answered by
// one FileResult from the agent; the bytes of a get flow agent → server
// after the result, the bytes of a put server → agent before it, as
// FileData chunks ending with Last. The reader grants the writer credit
// (FileData with Credit) so neither side ever buffers more than
// FileWindow chunks of one operation.

// File operations.
const (
	FileList   = "list"
	FileStat   = "stat"
	FileGet    = "get"
	FilePut    = "put"
	FileDelete = "delete"
	FileSize   = "size"
)

// File error codes in a FileResult.
const (
	FileNotFound = "NOT_FOUND"
	FileInvalid  = "INVALID"
	FileFailed   = "FAILED"
)

// Chunking of file bytes: MaxFileChunk bytes a chunk (base64 keeps it under
// MaxMessageBytes), at most FileWindow chunks of one operation in flight.
const (
	MaxFileChunk = 512 << 10
	FileWindow   = 8
)

// FileOp asks the agent for an operation on the files under Root.
type FileOp struct {
	ID     uint64 `json:"id"`
	Op     string `json:"op"`
	Root   string `json:"root"`   // the storage's directory on the node
	Bucket string `json:"bucket"` // the bucket's directory under Root
	Key    string `json:"key,omitempty"`
	Prefix string `json:"prefix,omitempty"` // list
	After  string `json:"after,omitempty"`  // list
	Limit  int    `json:"limit,omitempty"`  // list
	Size   int64  `json:"size,omitempty"`   // put: bytes that follow, -1 unknown
}

// FileData carries bytes of an operation, or credit for more of them, or
// (Abort) its cancellation by the side that started it.
type FileData struct {
	ID     uint64 `json:"id"`
	Data   []byte `json:"data,omitempty"`
	Last   bool   `json:"last,omitempty"`
	Credit int    `json:"credit,omitempty"`
	Abort  bool   `json:"abort,omitempty"`
}

// FileResult ends an operation (for a get: starts its bytes).
type FileResult struct {
	ID      uint64       `json:"id"`
	Code    string       `json:"code,omitempty"` // empty: success
	Error   string       `json:"error,omitempty"`
	Objects []FileObject `json:"objects,omitempty"` // list; stat, get and put: the object
	Size    int64        `json:"size,omitempty"`    // size
}

// FileObject describes a file.
type FileObject struct {
	Key      string    `json:"key"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

func (FileOp) Kind() Kind     { return KindFileOp }
func (FileData) Kind() Kind   { return KindFileData }
func (FileResult) Kind() Kind { return KindFileResult }

// Validate implements Msg. Keys and bucket names are checked again where
// they are used (the storage package); this refuses what is malformed.
func (m FileOp) Validate() error {
	c := checker{kind: KindFileOp}
	c.rangeInt("id", int64(m.ID), 1, 1<<62)
	switch m.Op {
	case FileList, FileSize:
	case FileStat, FileGet, FilePut, FileDelete:
		if m.Key == "" {
			c.bad("key", "is required for %s", m.Op)
		}
	default:
		c.bad("op", "unknown operation %.20q", m.Op)
	}
	if !cleanAbs(m.Root) {
		c.bad("root", "%.70q is not a clean absolute path", m.Root)
	}
	c.id("bucket", m.Bucket)
	for f, v := range map[string]string{"key": m.Key, "prefix": m.Prefix, "after": m.After} {
		c.text(f, v, 1024)
		if hasNUL(v) {
			c.bad(f, "contains a NUL byte")
		}
	}
	c.rangeInt("limit", int64(m.Limit), 0, 10000)
	c.rangeInt("size", m.Size, -1, 1<<50)
	return c.err()
}

// Validate implements Msg.
func (m FileData) Validate() error {
	c := checker{kind: KindFileData}
	c.rangeInt("id", int64(m.ID), 1, 1<<62)
	if len(m.Data) > MaxFileChunk {
		c.bad("data", "is %d bytes, at most %d allowed", len(m.Data), MaxFileChunk)
	}
	c.rangeInt("credit", int64(m.Credit), 0, FileWindow)
	return c.err()
}

// Validate implements Msg.
func (m FileResult) Validate() error {
	c := checker{kind: KindFileResult}
	c.rangeInt("id", int64(m.ID), 1, 1<<62)
	switch m.Code {
	case "", FileNotFound, FileInvalid, FileFailed:
	default:
		c.bad("code", "unknown code %.20q", m.Code)
	}
	c.text("error", m.Error, MaxReasonBytes)
	if len(m.Objects) > 10000 {
		c.bad("objects", "at most 10000")
	}
	for i, o := range m.Objects {
		c.text(fmt.Sprintf("objects[%d].key", i), o.Key, 1024)
	}
	c.rangeInt("size", m.Size, 0, 1<<62)
	return c.err()
}
