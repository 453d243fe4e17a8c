package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/levers9/levers9/internal/dbtest"
)

// A file uploaded through the Files page downloads back byte for byte,
// and can be deleted.
func TestBrowserUploadDownload(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		s := startServer(t, t.TempDir(), url)
		c := s.credentials()
		storage := firstID(t, s.URL, c.Token, `{ storages(where: {name: "local"}) { edges { node { id } } } }`, "storages")
		group := firstID(t, s.URL, c.Token, `{ groups(where: {name: "everyone"}) { edges { node { id } } } }`, "groups")
		gql(t, s.URL, c.Token, `mutation($s: ID!, $g: ID!) { createBucket(input: {name: "results", storageID: $s, writeGroupIDs: [$g]}) { id } }`,
			map[string]any{"s": storage, "g": group}, new(map[string]any))

		data := make([]byte, 700<<10+3) // several multipart buffers
		_, _ = rand.Read(data)
		src := filepath.Join(t.TempDir(), "weights.bin")
		if err := os.WriteFile(src, data, 0o644); err != nil {
			t.Fatal(err)
		}

		tb := newTab(t, s.URL)
		tb.signIn(c.AdminEmail, c.AdminPassword)
		tb.open("/buckets")
		tb.do("opening the bucket",
			chromedp.Click(chromedp.CSS(`#buckets a[href="/buckets/results"]`)),
			chromedp.WaitVisible(chromedp.ID("upload-form")),
			chromedp.SetUploadFiles(chromedp.ID("upload-file"), []string{src}),
			chromedp.Click(chromedp.ID("upload-submit")),
		)
		tb.waitText("#objects", "weights.bin")

		dir := t.TempDir()
		progress := chromedp.Events(tb.ctx, browser.DownloadProgress)
		tb.do("downloading",
			chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
				yes := true
				_, err := chromedp.Call(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
					Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: &yes,
				})
				return err
			}),
			chromedp.Click(chromedp.CSS(`#objects a[download]`)),
		)
		var got []byte
		for ev, err := range progress {
			if err != nil {
				t.Fatalf("waiting for the download: %v", err)
			}
			if ev.State == browser.DownloadProgressStateCanceled {
				t.Fatal("the download was cancelled")
			}
			if ev.State != browser.DownloadProgressStateCompleted {
				continue
			}
			if got, err = os.ReadFile(filepath.Join(dir, ev.GUID)); err != nil {
				t.Fatal(err)
			}
			break
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("downloaded %d bytes that differ from the %d uploaded", len(got), len(data))
		}

		tb.do("deleting", chromedp.Click(chromedp.CSS(`#objects button[aria-label="Delete weights.bin"]`)))
		tb.waitText("main", "Deleted weights.bin")
		if tb.present("#objects") {
			t.Error("the deleted file is still listed")
		}
	})
}
