package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/levers9/levers9/internal/dbtest"
)

var browserJoinRe = regexp.MustCompile(`levers9 agent join --server (\S+) --invite (lv9_[a-z2-7]+)`)

// A tenant admin invites a node (the join command shown once, naming this
// server) and creates a queue with GPU prices, from the navigation on.
func TestBrowserAdminInviteAndQueue(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		s := startServer(t, t.TempDir(), url)
		c := s.credentials()
		tb := newTab(t, s.URL)
		tb.signIn(c.AdminEmail, c.AdminPassword)
		if nav := tb.text("header nav"); !strings.Contains(nav, "Nodes") || !strings.Contains(nav, "Admin") {
			t.Fatalf("the admin's navigation lacks Nodes or Admin: %q", nav)
		}

		tb.do("creating an invite",
			chromedp.Click(`header nav a[href="/nodes"]`),
			chromedp.WaitVisible(chromedp.ID("invite-form")),
			chromedp.SendKeys(chromedp.ID("invite-nodeName"), "gpu-9"),
			chromedp.Click(chromedp.ID("create-invite")),
			chromedp.WaitVisible(chromedp.ID("new-invite")),
		)
		m := browserJoinRe.FindStringSubmatch(tb.text("#new-invite"))
		if m == nil || m[1] != s.URL {
			t.Fatalf("join command %q; want one naming %s", tb.text("#new-invite"), s.URL)
		}
		tb.waitText("#invites", "gpu-9")
		if tb.open("/nodes") != 200 || tb.present("#new-invite") || strings.Contains(tb.text("main"), m[2]) {
			t.Fatal("the invite code shows again after the page is reloaded")
		}

		tb.do("creating a queue",
			chromedp.Click(`header nav a[href="/admin"]`),
			chromedp.WaitVisible(chromedp.ID("new-queue")),
			chromedp.Click(chromedp.ID("new-queue")),
			chromedp.WaitVisible(chromedp.ID("queue-form")),
			chromedp.SendKeys(chromedp.ID("queue-name"), "gpu-e2e"),
		)
		tb.setValue("#queue-gpuPrices", "A100 0.5")
		tb.setValue("#queue-startFee", "2")
		tb.do("submitting the queue",
			chromedp.Click(`#queue-groups input[type=checkbox]`),
			chromedp.Click(chromedp.ID("save-queue")),
			chromedp.WaitVisible(chromedp.ID("queues")),
		)
		tb.waitText("#queues", "gpu-e2e")
		tb.waitText("#queues", "A100 0.5/GPU-min")
		tb.waitText("#queues", "start 2")
		tb.waitText(".flash", "Queue gpu-e2e created.")
	})
}
