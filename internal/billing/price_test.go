package billing

import (
	"strings"
	"testing"
)

func TestParseTokens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Tokens
		err  bool
	}{
		{"0", 0, false},
		{"1", Unit, false},
		{"1.5", 1_500_000, false},
		{"-0.000001", -1, false},
		{"2e3", 2000 * Unit, false},
		{"0.0000001", 0, true},
		{"1.", 0, true},
		{".5", 0, true},
		{"abc", 0, true},
		{"1e400", 0, true},
		{"99999999999999999999", 0, true},
	} {
		got, err := ParseTokens(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("ParseTokens(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func FuzzTokensRoundTrip(f *testing.F) {
	f.Add("12.345")
	f.Add("-7")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseTokens(s)
		if err != nil {
			return
		}
		back, err := ParseTokens(v.String())
		if err != nil || back != v {
			t.Fatalf("%q -> %v -> %q -> %v (%v)", s, v, v.String(), back, err)
		}
	})
}

func TestPerMinute(t *testing.T) {
	t.Parallel()
	r := Rates{
		GPU:                []GPURate{{"H100", 10 * Unit}, {"A10", 2 * Unit}},
		CPUPerMinute:       Unit / 10,
		MemoryGiBPerMinute: Unit / 100,
		StartFee:           5 * Unit,
		Multiplier:         1.5,
	}
	for _, tc := range []struct {
		name string
		u    Usage
		want Tokens
		err  string
	}{
		{"nothing", Usage{}, 0, ""},
		{"cpu and memory", Usage{CPUs: 2, MemoryMiB: 2048}, Tokens(1.5 * (0.2 + 0.02) * 1e6), ""},
		{"gpus", Usage{GPUs: []GPUUse{{"H100", 2}, {"A10", 1}}}, Tokens(1.5 * 22 * 1e6), ""},
		{"unknown gpu", Usage{GPUs: []GPUUse{{"V100", 1}}}, 0, "no price for GPU type"},
	} {
		got, err := PerMinute(r, tc.u)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: PerMinute = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	est, err := EstimateCost(r, Usage{GPUs: []GPUUse{{"A10", 1}}}, 60)
	if err != nil {
		t.Fatal(err)
	}
	if est.StartFee != 5*Unit || est.PerMinute != 3*Unit || est.Total != 185*Unit {
		t.Errorf("estimate = %+v", est)
	}
}

func TestValidateRates(t *testing.T) {
	t.Parallel()
	ok := Rates{Multiplier: 1}
	if err := ValidateRates(ok); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]Rates{
		"negative cpu":    {CPUPerMinute: -1, Multiplier: 1},
		"absurd fee":      {StartFee: MaxPerMinute + 1, Multiplier: 1},
		"zero multiplier": {},
		"duplicate gpu":   {GPU: []GPURate{{"A", 1}, {"A", 2}}, Multiplier: 1},
		"empty gpu type":  {GPU: []GPURate{{"", 1}}, Multiplier: 1},
	} {
		if ValidateRates(r) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
