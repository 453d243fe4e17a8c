package runtime

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/levers9/levers9/agent/supervise"
)

// The test binary doubles as the services' program: with L9TEST_HELPER
// set it runs a helper instead of the tests, so tests need nothing
// installed beyond sh and sleep.
const helperVar = "L9TEST_HELPER"

func TestMain(m *testing.M) {
	// The supervisor of every service, as the agent's binary runs it.
	if len(os.Args) > 1 && os.Args[1] == supervise.Arg {
		os.Exit(supervise.Supervise(os.Args[2:]))
	}
	if mode := os.Getenv(helperVar); mode != "" {
		os.Exit(helper(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helperService is a service spec running helper mode with args.
func helperService(t *testing.T, name, mode string, args ...string) ServiceSpec {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return ServiceSpec{Name: name, Command: []string{exe}, Args: args, Env: []EnvVar{{Name: helperVar, Value: mode}}}
}

func helper(mode string, args []string) int {
	switch mode {
	case "env": // the working directory and the sorted environment
		wd, _ := os.Getwd()
		fmt.Println("cwd=" + wd)
		env := os.Environ()
		sort.Strings(env)
		for _, kv := range env {
			fmt.Println(kv)
		}
	case "serve": // answer one request on our port "http", then exit
		return serveOnce()
	case "fetch": // GET / from service args[0] and print the body
		return fetch(args[0])
	case "spam": // args[0] numbered lines on stdout and stderr, interleaved
		n, _ := strconv.Atoi(args[0])
		svc := os.Getenv("LEVERS9_SERVICE")
		for i := range n {
			fmt.Fprintf(os.Stdout, "%s out %d\n", svc, i)
			fmt.Fprintf(os.Stderr, "%s err %d\n", svc, i)
		}
	case "longline": // a line of args[0] bytes, then "short"
		n, _ := strconv.Atoi(args[0])
		fmt.Print(strings.Repeat("a", n) + "\nshort\n")
	case "hog": // touch args[0] MiB of memory, then exit
		n, _ := strconv.Atoi(args[0])
		b := make([]byte, n<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		fmt.Println("allocated", len(b))
	case "stdinflags": // whether stdin is non-blocking, then makes it so
		flags, err := unix.FcntlInt(0, unix.F_GETFL, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("nonblock=%t\n", flags&unix.O_NONBLOCK != 0)
		if _, err := unix.FcntlInt(0, unix.F_SETFL, flags|unix.O_NONBLOCK); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	case "agent": // an agent-like parent: see runAgent
		return runAgent(args)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		return 2
	}
	return 0
}

func addr(service, port string) string {
	k := "LEVERS9_" + EnvKey(service)
	return net.JoinHostPort(os.Getenv(k+"_HOST"), os.Getenv(k+"_PORT_"+EnvKey(port)))
}

func serveOnce() int {
	l, err := net.Listen("tcp", addr(os.Getenv("LEVERS9_SERVICE"), "http"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	served := make(chan struct{}, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", os.Getenv("LEVERS9_SERVICE"))
		served <- struct{}{}
	})}
	go func() { _ = srv.Serve(l) }()
	fmt.Println("listening on", l.Addr())
	<-served
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func fetch(service string) int {
	url := "http://" + addr(service, "http") + "/"
	// The sibling may not listen yet; retry for a generous while.
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			fmt.Printf("got %q\n", body)
			return 0
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		time.Sleep(20 * time.Millisecond)
	}
}
