// Package wire is the versioned protocol between the node agent and the
// server, and the only package the two share. Each message is one JSON
// object (one WebSocket text frame):
//
//	{"v":1,"type":"start","seq":7,"body":{...}}
//
// v is the protocol Version, type names the body's Kind, seq is an optional
// sender-assigned number that the receiver may acknowledge with an Ack.
//
// Decode refuses messages that are too large, of another version, of an
// unknown type, malformed or invalid, so handlers only ever see messages
// whose fields they can trust. Unknown JSON fields are ignored: adding an
// optional field does not change the Version, changing the meaning of one
// does.
package wire

// Version is the protocol version this package speaks.
const Version = 1

// Limits enforced by Encode and Decode.
const (
	MaxMessageBytes = 1 << 20  // a whole encoded message
	MaxLogLineBytes = 64 << 10 // the text of one log line; longer lines are split by the agent
	MaxServices     = 64       // services of one job
	MaxReasonBytes  = 4096     // free-text reasons and errors
	MaxTimeout      = 366 * 24 * 3600
	MaxGrace        = 24 * 3600
)
