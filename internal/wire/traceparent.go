package wire

import "errors"

// TraceParentLen is the length of a version 00 W3C traceparent:
// "00-" 32 hex digits "-" 16 hex digits "-" 2 hex digits.
const TraceParentLen = 55

// CheckTraceParent reports whether s is a version 00 W3C traceparent
// (https://www.w3.org/TR/trace-context/#traceparent-header) with a trace
// ID and a parent ID that are not all zeros. The wire package stays free
// of OpenTelemetry; the agent parses the value with its propagator.
func CheckTraceParent(s string) error {
	bad := errors.New("not a W3C traceparent (00-TRACEID-SPANID-FLAGS, lower-case hex)")
	if len(s) != TraceParentLen || s[:3] != "00-" || s[35] != '-' || s[52] != '-' {
		return bad
	}
	for _, part := range []string{s[3:35], s[36:52], s[53:]} {
		zero := true
		for i := 0; i < len(part); i++ {
			c := part[i]
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return bad
			}
			zero = zero && c == '0'
		}
		if zero && len(part) > 2 {
			return bad // an all-zero trace or span ID is invalid
		}
	}
	return nil
}
