package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// envelope is what goes on the wire around every body.
type envelope struct {
	V    *int            `json:"v"` // nil: none given
	Type Kind            `json:"type"`
	Seq  uint64          `json:"seq,omitempty"`
	Body json.RawMessage `json:"body"`
}

// envelopeHead is envelope without its body, in the same order: what
// EncodeSeq writes before the body.
type envelopeHead struct {
	V    int    `json:"v"`
	Type Kind   `json:"type"`
	Seq  uint64 `json:"seq,omitempty"`
}

var decoders = map[Kind]func([]byte) (Msg, error){
	KindHello:       decodeBody[Hello],
	KindWelcome:     decodeBody[Welcome],
	KindHeartbeat:   decodeBody[Heartbeat],
	KindStart:       decodeBody[Start],
	KindStop:        decodeBody[Stop],
	KindStateChange: decodeBody[StateChange],
	KindLogs:        decodeBody[Logs],
	KindReconcile:   decodeBody[Reconcile],
	KindAck:         decodeBody[Ack],
	KindFileOp:      decodeBody[FileOp],
	KindFileData:    decodeBody[FileData],
	KindFileResult:  decodeBody[FileResult],
}

func decodeBody[T Msg](b []byte) (Msg, error) {
	var m T
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// Encode validates m and encodes it without a sequence number.
func Encode(m Msg) ([]byte, error) { return EncodeSeq(0, m) }

// EncodeSeq validates m and encodes it with sequence number seq (0 = none).
// An invalid message is never sent: the receiver would refuse it anyway.
func EncodeSeq(seq uint64, m Msg) ([]byte, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: nil message", ErrInvalid)
	}
	if _, ok := decoders[m.Kind()]; !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownType, m.Kind())
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	body, err := marshal(m)
	if err != nil {
		return nil, fmt.Errorf("wire: encode %s: %w", m.Kind(), err)
	}
	// The envelope without its body, then the body appended: marshalling
	// the envelope with the body as a json.RawMessage would scan the body
	// again to compact it (a tenth of a busy log's CPU), to the same bytes.
	head, err := marshal(envelopeHead{V: Version, Type: m.Kind(), Seq: seq})
	if err != nil {
		return nil, fmt.Errorf("wire: encode %s: %w", m.Kind(), err)
	}
	out := make([]byte, 0, len(head)+len(`,"body":`)+len(body))
	out = append(append(append(out, head[:len(head)-1]...), `,"body":`...), body...)
	out = append(out, '}')
	if len(out) > MaxMessageBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, at most %d allowed", ErrTooLarge, m.Kind(), len(out), MaxMessageBytes)
	}
	return out, nil
}

// marshal is json.Marshal without HTML escaping: log lines full of '<' would
// otherwise grow sixfold.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Decode decodes and validates one message, dropping its sequence number.
func Decode(b []byte) (Msg, error) {
	_, m, err := DecodeSeq(b)
	return m, err
}

// DecodeSeq decodes and validates one message. It returns the envelope's
// sequence number (0 = none) and the body as a value type (Start, not
// *Start), ready for a type switch. Errors wrap ErrTooLarge, ErrVersion,
// ErrUnknownType, ErrMalformed or ErrInvalid (an *InvalidError).
func DecodeSeq(b []byte) (uint64, Msg, error) {
	if len(b) > MaxMessageBytes {
		return 0, nil, fmt.Errorf("%w: %d bytes, at most %d allowed", ErrTooLarge, len(b), MaxMessageBytes)
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return 0, nil, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil || env.V == nil || *env.V != Version {
		// The version first, alone: a newer envelope may not parse as
		// ours, and "wrong version" is the error that helps. (Only when
		// the envelope is not one of ours: parsing a message once more
		// costs as much as decoding its body.)
		var head struct {
			V *int `json:"v"`
		}
		if err := json.Unmarshal(b, &head); err != nil {
			return 0, nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		if head.V == nil {
			return 0, nil, fmt.Errorf("%w: none given (this side speaks %d)", ErrVersion, Version)
		}
		if *head.V != Version {
			return 0, nil, fmt.Errorf("%w %d (this side speaks %d)", ErrVersion, *head.V, Version)
		}
		return 0, nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	dec, ok := decoders[env.Type]
	if !ok {
		return 0, nil, fmt.Errorf("%w %.40q", ErrUnknownType, env.Type)
	}
	if len(env.Body) == 0 || string(env.Body) == "null" {
		return 0, nil, fmt.Errorf("%w: %s without a body", ErrMalformed, env.Type)
	}
	m, err := dec(env.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %s body: %v", ErrMalformed, env.Type, err)
	}
	if err := m.Validate(); err != nil {
		return 0, nil, err
	}
	return env.Seq, m, nil
}
