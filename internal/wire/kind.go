package wire

// Kind names a message type on the wire.
type Kind string

// The message kinds. The comment says who sends it.
const (
	KindHello       Kind = "hello"       // agent, first message on a connection
	KindWelcome     Kind = "welcome"     // server, answer to hello
	KindHeartbeat   Kind = "heartbeat"   // agent
	KindStart       Kind = "start"       // server
	KindStop        Kind = "stop"        // server
	KindStateChange Kind = "stateChange" // agent
	KindLogs        Kind = "logs"        // agent
	KindReconcile   Kind = "reconcile"   // server, after welcome
	KindAck         Kind = "ack"         // either side
	KindFileOp      Kind = "fileOp"      // server
	KindFileData    Kind = "fileData"    // either side
	KindFileResult  Kind = "fileResult"  // agent
)

// Msg is a message body. Every message type in this package implements it.
type Msg interface {
	Kind() Kind
	// Validate returns an *InvalidError listing every invalid field, or nil.
	Validate() error
}

// FromAgent reports whether an agent may send messages of kind k, so the
// server can refuse a node that sends, say, a start.
func (k Kind) FromAgent() bool {
	switch k {
	case KindHello, KindHeartbeat, KindStateChange, KindLogs, KindAck, KindFileData, KindFileResult:
		return true
	}
	return false
}

// FromServer reports whether the server may send messages of kind k.
func (k Kind) FromServer() bool {
	switch k {
	case KindWelcome, KindStart, KindStop, KindReconcile, KindAck, KindFileOp, KindFileData:
		return true
	}
	return false
}

func (Hello) Kind() Kind       { return KindHello }
func (Welcome) Kind() Kind     { return KindWelcome }
func (Heartbeat) Kind() Kind   { return KindHeartbeat }
func (Start) Kind() Kind       { return KindStart }
func (Stop) Kind() Kind        { return KindStop }
func (StateChange) Kind() Kind { return KindStateChange }
func (Logs) Kind() Kind        { return KindLogs }
func (Reconcile) Kind() Kind   { return KindReconcile }
func (Ack) Kind() Kind         { return KindAck }
