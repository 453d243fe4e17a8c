package wire

// envelopeSlack covers the envelope around a Logs body, the longest
// possible seq included.
const envelopeSlack = 128

// SplitLogs cuts lines (valid, contiguous, in order) of one job into Logs
// messages that each encode within MaxMessageBytes. Any single valid line
// fits: 64 KiB of text escapes to at most 384 KiB.
func SplitLogs(jobID string, attempt int, lines []LogLine) []Logs {
	budget := MaxMessageBytes - envelopeSlack - len(jobID) - len(`{"jobId":"","attempt":1000,"lines":[]}`)
	var out []Logs
	start, size := 0, 0
	for i, l := range lines {
		n := lineSize(l) + 1 // the comma
		if i > start && size+n > budget {
			out = append(out, Logs{JobID: jobID, Attempt: attempt, Lines: lines[start:i]})
			start, size = i, 0
		}
		size += n
	}
	if start < len(lines) {
		out = append(out, Logs{JobID: jobID, Attempt: attempt, Lines: lines[start:]})
	}
	return out
}

func lineSize(l LogLine) int {
	b, err := marshal(l)
	if err != nil {
		// Only an out-of-range time fails; Encode reports it properly.
		return MaxMessageBytes
	}
	return len(b)
}
