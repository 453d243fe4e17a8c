package wire

import "unicode/utf8"

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

// lineSize is at least the length of l encoded (marshal(l)), and exactly
// that unless its strings hold control characters, found without
// encoding it: encoding every line of a busy log once to measure it and
// again to send it cost a tenth of the agent's and server's CPU.
func lineSize(l LogLine) int {
	t, err := l.Time.MarshalJSON()
	if err != nil {
		// Only an out-of-range time fails; Encode reports it properly.
		return MaxMessageBytes
	}
	return len(`{"service":,"stream":,"seq":,"time":,"text":}`) + jsonStringSize(l.Service) + jsonStringSize(string(l.Stream)) +
		digits(l.Seq) + len(t) + jsonStringSize(l.Text)
}

// jsonStringSize is at least the length of s encoded as a JSON string by
// marshal: '"' and '\\' escape to two bytes, a control character to at
// most six, invalid UTF-8 and U+2028 and U+2029 to six.
func jsonStringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				n += 2
			case c < 0x20:
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}

// digits is the length of n in decimal.
func digits(n uint64) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}
