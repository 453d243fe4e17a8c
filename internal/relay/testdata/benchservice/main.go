// Command benchservice is the job service of the relay benchmarks
// (bench_test.go): fast enough that the path to it, not it, is measured.
//
// On $LEVERS9_WEB_PORT_HTTP it serves GET /bytes?n=N (N zero bytes) and
// GET /small (a few bytes). On $LEVERS9_WEB_PORT_TCP a connection first
// sends an 8-byte big-endian count N: N > 0 gets N zero bytes back and
// the connection closes; N = 0 makes it an echo.
package main

import (
	"encoding/binary"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
)

var zeros = make([]byte, 256<<10)

func main() {
	go func() { log.Fatal(serveTCP("127.0.0.1:" + os.Getenv("LEVERS9_WEB_PORT_TCP"))) }()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /bytes", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		if err != nil || n < 0 {
			http.Error(w, "n: a byte count", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		_, _ = send(w, n)
	})
	mux.HandleFunc("GET /small", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	log.Fatal(http.ListenAndServe("127.0.0.1:"+os.Getenv("LEVERS9_WEB_PORT_HTTP"), mux))
}

func serveTCP(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			var hdr [8]byte
			if _, err := io.ReadFull(c, hdr[:]); err != nil {
				return
			}
			if n := int64(binary.BigEndian.Uint64(hdr[:])); n > 0 {
				_, _ = send(c, n)
				return
			}
			_, _ = io.Copy(c, c)
		}()
	}
}

// send writes n zero bytes to w.
func send(w io.Writer, n int64) (int64, error) {
	var sent int64
	for sent < n {
		m, err := w.Write(zeros[:min(int64(len(zeros)), n-sent)])
		sent += int64(m)
		if err != nil {
			return sent, err
		}
	}
	return sent, nil
}
