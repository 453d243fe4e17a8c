package supervise

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestTaskRoundTrip(t *testing.T) {
	t.Parallel()
	for _, task := range []Task{
		{},
		{Dir: "/w", Args: []string{"--", "true"}},
		{Dir: "/w/job/s", Args: []string{"-uid", "1000", "--", "sh", "-c", ""}, Env: []string{"A=1", "B=", "PATH=/bin"}},
		{Dir: "", Args: []string{"", ""}, Env: []string{""}},
		{Dir: "/a b\n", Args: []string{"é", "\n"}, Env: []string{"X=y=z"}},
	} {
		b, err := task.MarshalBinary()
		if err != nil {
			t.Fatalf("%+v: %v", task, err)
		}
		var got Task
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("%+v: %v", task, err)
		}
		if got.Dir != task.Dir || !slices.Equal(got.Args, task.Args) || !slices.Equal(got.Env, task.Env) {
			t.Errorf("round trip of %+v gave %+v", task, got)
		}
	}
}

func TestTaskRefused(t *testing.T) {
	t.Parallel()
	for _, task := range []Task{
		{Dir: "/w\x00"},
		{Args: []string{"a\x00b"}},
		{Env: []string{"TOKEN=s3cret\x00"}},
	} {
		_, err := task.MarshalBinary()
		if err == nil {
			t.Errorf("%q encoded", task)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the error shows a variable's value: %v", err)
		}
	}
	for _, in := range []string{
		"",                  // nothing (the agent closed the pipe without a task)
		"/w",                // not terminated
		"/w\x00",            // no count
		"/w\x001\x00",       // one argument promised, none given
		"/w\x00-1\x00",      // negative
		"/w\x00x\x00",       // not a number
		"/w\x00+1\x00a\x00", // not as encoded
		"/w\x0001\x00a\x00", // not as encoded
		"/w\x002\x00a\x00",
	} {
		var got Task
		if err := got.UnmarshalBinary([]byte(in)); err == nil {
			t.Errorf("%q decoded as %+v", in, got)
		}
	}
}

// FuzzTask: any input decodes to a task that encodes back to the same
// bytes, or is refused; any task without NUL bytes survives a round trip.
func FuzzTask(f *testing.F) {
	f.Add([]byte("/w\x002\x00--\x00true\x00A=1\x00"), "/w", "a", "B=2")
	f.Add([]byte("\x000\x00"), "", "", "")
	f.Fuzz(func(t *testing.T, data []byte, dir, arg, env string) {
		var got Task
		if err := got.UnmarshalBinary(data); err == nil {
			again, err := got.MarshalBinary()
			if err != nil || !bytes.Equal(again, data) {
				t.Fatalf("%q decoded as %+v, encoded back as %q (%v)", data, got, again, err)
			}
		}
		task := Task{Dir: dir, Args: []string{arg, dir}, Env: []string{env}}
		b, err := task.MarshalBinary()
		if strings.ContainsRune(dir+arg+env, 0) {
			if err == nil {
				t.Fatalf("%+v encoded", task)
			}
			return
		}
		var back Task
		if err != nil || back.UnmarshalBinary(b) != nil || back.Dir != dir || !slices.Equal(back.Args, task.Args) || !slices.Equal(back.Env, task.Env) {
			t.Fatalf("%+v: round trip gave %+v (%v)", task, back, err)
		}
	})
}
