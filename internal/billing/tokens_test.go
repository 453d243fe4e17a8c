package billing

import (
	"encoding/json"
	"math"
	"testing"
)

// TestTokensRefuseBadNumbers: every form a client can send an amount in
// (GraphQL literal, JSON number, string) refuses what no amount can be, with
// the reason.
func TestTokensRefuseBadNumbers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   any
		want error // nil: accepted
		val  Tokens
	}{
		{"NaN", errTokens, 0},
		{"nan", errTokens, 0},
		{"Infinity", errTokens, 0},
		{"-Infinity", errTokens, 0},
		{"inf", errTokens, 0},
		{"", errTokens, 0},
		{"-", errTokens, 0},
		{"+1", errTokens, 0},
		{"0x10", errTokens, 0},
		{"1_000", errTokens, 0},
		{math.NaN(), errTokens, 0},
		{math.Inf(1), errTokensBig, 0},
		{math.Inf(-1), errTokensBig, 0},
		{1e30, errTokensBig, 0},
		{json.Number("1e30"), errTokensBig, 0},
		{"1e30", errTokensBig, 0},
		{"-1e30", errTokensBig, 0},
		{"1e400", errTokensBig, 0},
		{json.Number("1e400"), errTokensBig, 0},
		{"1000000000000.000001", errTokensBig, 0},
		{"99999999999999999999", errTokensBig, 0},
		{int64(math.MaxInt64), errTokensBig, 0},
		{1e-7, errTokensFine, 0},
		{json.Number("1e-7"), errTokensFine, 0},
		{"1e-7", errTokensFine, 0},
		{"0.0000001", errTokensFine, 0},
		{true, errTokens, 0},
		{nil, errTokens, 0},
		// Accepted, exactly.
		{"1000000000000", nil, MaxTokens},
		{"-1000000000000", nil, -MaxTokens},
		{1e12, nil, MaxTokens},
		{"0.000001", nil, 1},
		{"1.5000000", nil, 1_500_000},
		{1e-6, nil, 1},
		{json.Number("2.5"), nil, 2_500_000},
		{int64(3), nil, 3 * Unit},
		{7, nil, 7 * Unit},
	} {
		var got Tokens
		err := got.UnmarshalGQL(tc.in)
		if err != tc.want || got != tc.val {
			t.Errorf("UnmarshalGQL(%#v) = %v, %v; want %v, %v", tc.in, got, err, tc.val, tc.want)
		}
	}
}
