package wire

// The files API (/files/BUCKET/KEY over HTTPS) is how an agent moves a
// job's bucket files in and out; these are the parts of it both sides
// must agree on.

// JobHeader names the job a node acts for on the files API; the node's
// credential is the bearer token.
const JobHeader = "Levers9-Job"

// FileListing is one page of a bucket listing on the files API.
type FileListing struct {
	Objects []FileObject `json:"objects"`
	// Next is the key to pass as after= for the next page, if any.
	Next string `json:"next,omitempty"`
}
