package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/levers9/levers9/internal/wire"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// A remote path is BUCKET:KEY (BUCKET: alone for the whole bucket); a local
// path is anything else. "./a:b" is local.
func remote(p string) (bucket, key string, ok bool) {
	if strings.HasPrefix(p, ".") || strings.HasPrefix(p, "/") {
		return "", "", false
	}
	b, k, found := strings.Cut(p, ":")
	if !found || b == "" || strings.Contains(b, "/") {
		return "", "", false
	}
	return b, strings.TrimPrefix(k, "/"), true
}

// filesURL is the files API URL of a bucket and key, each segment escaped.
func (c clientFlags) filesURL(bucket, key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.TrimRight(c.Server, "/") + "/files/" + url.PathEscape(bucket) + "/" + strings.Join(segs, "/")
}

// do sends a files API request and turns error answers into errors.
func (c clientFlags) do(ctx context.Context, method, u string, body io.Reader, size int64) (*http.Response, error) {
	if c.Token == "" {
		return nil, errors.New(errNoToken)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.ContentLength = size
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reaching %s: %w", c.Server, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var e struct {
			Error struct{ Code, Message string }
		}
		if json.NewDecoder(resp.Body).Decode(&e) == nil && e.Error.Code != "" {
			return nil, fmt.Errorf("%s: %s", e.Error.Code, e.Error.Message)
		}
		return nil, fmt.Errorf("server answered %s", resp.Status)
	}
	return resp, nil
}

// list returns every object of bucket under prefix, page by page.
func (c clientFlags) list(ctx context.Context, bucket, prefix string) ([]wire.FileObject, error) {
	var all []wire.FileObject
	after := ""
	for {
		q := url.Values{"prefix": {prefix}, "after": {after}, "limit": {"1000"}}
		resp, err := c.do(ctx, http.MethodGet, c.filesURL(bucket, "")+"?"+q.Encode(), nil, 0)
		if err != nil {
			return nil, err
		}
		var page wire.FileListing
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the listing: %w", err)
		}
		all = append(all, page.Objects...)
		if page.Next == "" {
			return all, nil
		}
		after = page.Next
	}
}

// newLsCommand lists a bucket: levers9 ls BUCKET[:PREFIX].
func newLsCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:               "ls [--json] BUCKET[:PREFIX]",
		Short:             "list a bucket's files",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	cmd.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 1 {
			fmt.Fprintln(a.stderr, "usage: levers9 ls [--json] BUCKET[:PREFIX]")
			return exitUsage
		}
		return listFiles(cmd.Context(), c, args[0], a.json, a.stdout, a.stderr)
	})
	return client(cmd, true)
}

// listFiles prints the objects of BUCKET[:PREFIX].
func listFiles(ctx context.Context, c clientFlags, arg string, asJSON bool, stdout, stderr io.Writer) int {
	bucket, prefix, ok := remote(arg)
	if !ok {
		bucket, prefix = arg, ""
	}
	objs, err := c.list(ctx, bucket, prefix)
	if err != nil {
		fmt.Fprintln(stderr, "levers9 ls:", err)
		return exitError
	}
	if asJSON {
		if objs == nil {
			objs = []wire.FileObject{}
		}
		return printJSON(stdout, stderr, objs)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	for _, o := range objs {
		fmt.Fprintf(w, "%d\t%s\t%s\t\n", o.Size, o.Modified.UTC().Format(time.DateTime), o.Key)
	}
	if err := w.Flush(); err != nil {
		return exitError
	}
	return exitOK
}

// newRmCommand removes objects: levers9 rm [-r] BUCKET:KEY.
func newRmCommand(a *app) *cobra.Command {
	var recursive bool
	cmd := &cobra.Command{
		Use:               "rm [-r] BUCKET:KEY",
		Short:             "delete files",
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "remove every object under the prefix")
	cmd.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		var bucket, key string
		ok := len(args) == 1
		if ok {
			bucket, key, ok = remote(args[0])
		}
		if !ok || key == "" {
			fmt.Fprintln(a.stderr, "usage: levers9 rm [-r] BUCKET:KEY")
			return exitUsage
		}
		return removeFiles(cmd.Context(), c, bucket, key, recursive, a.stdout, a.stderr)
	})
	return client(cmd, false)
}

// removeFiles removes bucket:key, or with recursive every object under it.
func removeFiles(ctx context.Context, c clientFlags, bucket, key string, recursive bool, stdout, stderr io.Writer) int {
	keys := []string{key}
	if recursive {
		objs, err := c.list(ctx, bucket, strings.TrimSuffix(key, "/")+"/")
		if err != nil {
			fmt.Fprintln(stderr, "levers9 rm:", err)
			return exitError
		}
		keys = keys[:0]
		for _, o := range objs {
			keys = append(keys, o.Key)
		}
	}
	for _, k := range keys {
		resp, err := c.do(ctx, http.MethodDelete, c.filesURL(bucket, k), nil, 0)
		if err != nil {
			fmt.Fprintf(stderr, "levers9 rm: %s:%s: %v\n", bucket, k, err)
			return exitError
		}
		resp.Body.Close()
		fmt.Fprintf(stdout, "removed %s:%s\n", bucket, k)
	}
	return exitOK
}

// newCpCommand copies between the local disk and buckets:
// levers9 cp [-r] SRC DST, where one side is BUCKET:KEY and the other a
// local path, or - for standard input (SRC) or output (DST).
func newCpCommand(a *app) *cobra.Command {
	cp := copier{stdin: a.stdin, stdout: a.stdout, stderr: a.stderr}
	var forceProgress bool
	cmd := &cobra.Command{
		Use:   "cp [-r] [--progress] SRC DST",
		Short: "copy between the local disk (or - for stdin/stdout) and BUCKET:KEY",
	}
	cmd.Flags().BoolVarP(&cp.recursive, "recursive", "r", false, "copy directories and prefixes recursively")
	cmd.Flags().BoolVar(&forceProgress, "progress", false, "show progress on stderr even when it is not a terminal (it is shown on a terminal anyway)")
	cmd.RunE = a.connected(func(cmd *cobra.Command, c clientFlags, args []string) int {
		if len(args) != 2 {
			fmt.Fprintln(a.stderr, "usage: levers9 cp [-r] [--progress] SRC DST   (one of them BUCKET:KEY; - is stdin or stdout)")
			return exitUsage
		}
		cp.c = c
		cp.progress = forceProgress || isTerminal(a.stderr)
		return cp.copy(cmd.Context(), args[0], args[1])
	})
	return client(cmd, false)
}

// copier copies files between the local disk (or the standard streams)
// and buckets.
type copier struct {
	c              clientFlags
	stdin          io.Reader
	stdout, stderr io.Writer
	recursive      bool
	progress       bool // progress lines on stderr
}

// stdio is the local path meaning standard input or output.
const stdio = "-"

// copy copies src to dst, one of them BUCKET:KEY, and returns the exit code.
func (cp copier) copy(ctx context.Context, src, dst string) int {
	sb, sk, srcRemote := remote(src)
	db, dk, dstRemote := remote(dst)
	var err error
	switch {
	case !srcRemote && dstRemote && src == stdio:
		if cp.recursive || dk == "" || strings.HasSuffix(dk, "/") {
			fmt.Fprintln(cp.stderr, "levers9 cp: standard input is one file: name it, as in cp - BUCKET:KEY (no -r)")
			return exitUsage
		}
		err = cp.uploadStream(ctx, cp.stdin, "standard input", db, dk, -1)
	case !srcRemote && dstRemote:
		err = cp.upload(ctx, src, db, dk)
	case srcRemote && !dstRemote && dst == stdio:
		if cp.recursive || sk == "" || strings.HasSuffix(sk, "/") {
			fmt.Fprintln(cp.stderr, "levers9 cp: standard output takes one file: name it, as in cp BUCKET:KEY - (no -r)")
			return exitUsage
		}
		err = cp.downloadTo(ctx, sb, sk, cp.stdout)
	case srcRemote && !dstRemote:
		err = cp.download(ctx, sb, sk, dst)
	default:
		fmt.Fprintln(cp.stderr, "levers9 cp: copy between the local disk and a bucket: exactly one side is BUCKET:KEY")
		return exitUsage
	}
	if err != nil {
		fmt.Fprintln(cp.stderr, "levers9 cp:", err)
		return exitError
	}
	return exitOK
}

func (cp copier) upload(ctx context.Context, src, bucket, key string) error {
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		if key == "" || strings.HasSuffix(key, "/") {
			key += filepath.Base(src)
		}
		return cp.uploadFile(ctx, src, bucket, key, info.Size())
	}
	if !cp.recursive {
		return fmt.Errorf("%s is a directory: use -r", src)
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return cp.uploadFile(ctx, p, bucket, path.Join(key, filepath.ToSlash(rel)), fi.Size())
	})
}

func (cp copier) uploadFile(ctx context.Context, src, bucket, key string, size int64) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	return cp.uploadStream(ctx, f, src, bucket, key, size)
}

// uploadStream uploads r, of size bytes (-1: unknown, sent chunked), as
// bucket:key; name is what the summary line calls the source.
func (cp copier) uploadStream(ctx context.Context, r io.Reader, name, bucket, key string, size int64) error {
	counted := &countingReader{r: cp.withProgress(r, size, key)}
	resp, err := cp.c.do(ctx, http.MethodPut, cp.c.filesURL(bucket, key), counted, size)
	if err != nil {
		return fmt.Errorf("%s → %s:%s: %w", name, bucket, key, err)
	}
	resp.Body.Close()
	fmt.Fprintf(cp.stdout, "%s → %s:%s (%d bytes)\n", name, bucket, key, counted.n)
	return nil
}

func (cp copier) download(ctx context.Context, bucket, key, dst string) error {
	if !cp.recursive {
		if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
			dst = filepath.Join(dst, path.Base(key))
		}
		return cp.downloadFile(ctx, bucket, key, dst)
	}
	prefix := strings.TrimSuffix(key, "/")
	if prefix != "" {
		prefix += "/"
	}
	objs, err := cp.c.list(ctx, bucket, prefix)
	if err != nil {
		return err
	}
	for _, o := range objs {
		rel := strings.TrimPrefix(o.Key, prefix)
		if err := cp.downloadFile(ctx, bucket, o.Key, filepath.Join(dst, filepath.FromSlash(rel))); err != nil {
			return err
		}
	}
	return nil
}

// downloadFile writes to a temporary file and renames it, so a broken
// download never leaves a truncated file under the final name.
func (cp copier) downloadFile(ctx context.Context, bucket, key, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".levers9-*")
	if err != nil {
		return err
	}
	quiet := cp
	quiet.stdout = io.Discard
	n, err := quiet.fetch(ctx, bucket, key, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s:%s → %s: %w", bucket, key, dst, err)
	}
	fmt.Fprintf(cp.stdout, "%s:%s → %s (%d bytes)\n", bucket, key, dst, n)
	return nil
}

// downloadTo writes bucket:key to w (standard output) and nothing else:
// the summary line would mix with the data.
func (cp copier) downloadTo(ctx context.Context, bucket, key string, w io.Writer) error {
	if _, err := cp.fetch(ctx, bucket, key, w); err != nil {
		return fmt.Errorf("%s:%s → standard output: %w", bucket, key, err)
	}
	return nil
}

// fetch copies bucket:key into w; a download shorter than announced is an
// error.
func (cp copier) fetch(ctx context.Context, bucket, key string, w io.Writer) (int64, error) {
	resp, err := cp.c.do(ctx, http.MethodGet, cp.c.filesURL(bucket, key), nil, 0)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, cp.withProgress(resp.Body, resp.ContentLength, key))
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
		err = fmt.Errorf("download ended after %d of %d bytes", n, resp.ContentLength)
	}
	return n, err
}

// withProgress shows progress lines of r on stderr when cp.progress is on.
func (cp copier) withProgress(r io.Reader, size int64, name string) io.Reader {
	if !cp.progress {
		return r
	}
	return &progressReader{r: r, w: cp.stderr, size: size, name: name}
}

// isTerminal is whether w is a terminal: progress goes there unasked.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// countingReader counts what was read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// progressReader writes a progress line (\r-rewritten) at most every
// 100 ms, and a last one with a newline at the end; size < 0 is unknown.
type progressReader struct {
	r          io.Reader
	w          io.Writer
	size, done int64
	name       string
	last       time.Time
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.done += int64(n)
	if now := time.Now(); now.Sub(p.last) > 100*time.Millisecond || err != nil {
		p.last = now
		if p.size > 0 {
			fmt.Fprintf(p.w, "\r%s %3d%% (%d/%d bytes)", p.name, p.done*100/p.size, p.done, p.size)
		} else {
			fmt.Fprintf(p.w, "\r%s %d bytes", p.name, p.done)
		}
		if err != nil {
			fmt.Fprintln(p.w)
		}
	}
	return n, err
}
