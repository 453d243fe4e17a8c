package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/levers9/levers9/internal/dbtest"
)

// A superadmin creates a tenant with its first admin from the tenant
// list, sees it listed with its usage, and that admin can sign in.
func TestBrowserSuperadminCreatesTenant(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		s := startServer(t, t.TempDir(), url, "LEVERS9_LOCAL_NODE=false")
		c := s.credentials()
		tb := newTab(t, s.URL)
		tb.signIn("superadmin@levers9.local", c.SuperadminPassword)
		tb.open("/superadmin")
		tb.do("filling in the new tenant",
			chromedp.WaitVisible(chromedp.ID("tenant-form")),
			chromedp.SendKeys(chromedp.ID("tenant-name"), "Bravo Labs"),
			chromedp.SendKeys(chromedp.ID("tenant-slug"), "bravo"),
			chromedp.SendKeys(chromedp.ID("tenant-emailDomains"), "bravo.test"),
			chromedp.SendKeys(chromedp.ID("tenant-adminEmail"), "ada@bravo.test"),
			chromedp.SendKeys(chromedp.ID("tenant-adminPassword"), "correct horse battery staple"),
			chromedp.Click(chromedp.ID("create-tenant")),
		)
		tb.waitText(".flash", "Tenant Bravo Labs created; its admin ada@bravo.test")
		tb.waitText("#tenant-row-bravo", "bravo.test")
		if row := tb.text("#tenant-row-bravo"); !strings.Contains(row, "none") {
			t.Errorf("the new tenant's row %q does not say it has no nodes", row)
		}
		var signIn struct{ SignIn struct{ Token string } }
		gql(t, s.URL, "", `mutation { signIn(email: "ada@bravo.test", password: "correct horse battery staple") { token } }`, nil, &signIn)
		if signIn.SignIn.Token == "" {
			t.Fatal("the new tenant's admin cannot sign in")
		}
	})
}

// A tenant admin revokes a node's credential from the Nodes page: the
// agent process is disconnected and stops (it cannot come back); then
// the node is removed.
func TestBrowserRevokeAndRemoveNode(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		s := startServer(t, t.TempDir(), url, "LEVERS9_LOCAL_NODE=false")
		c := s.credentials()
		var inv struct{ CreateNodeInvite struct{ Code string } }
		gql(t, s.URL, c.Token, `mutation { createNodeInvite(nodeName: "e2e-node") { code } }`, nil, &inv)
		agent := startAgent(t, "agent", "join", "--server", s.URL, "--invite", inv.CreateNodeInvite.Code,
			"--state-dir", filepath.Join(t.TempDir(), "agent"), "--cpus", "2", "--memory", "1GiB", "--runtime", "process")
		var n *nodeRow
		poll(t, "the node online", func() bool {
			n = nodeByName(t, s.URL, c.Token, "e2e-node")
			return n != nil && n.Status == "ONLINE"
		})

		tb := newTab(t, s.URL)
		tb.signIn(c.AdminEmail, c.AdminPassword)
		tb.open("/nodes")
		tb.do("revoking the node's credential",
			chromedp.Click(`a[aria-label="Remove or revoke node e2e-node"]`),
			chromedp.WaitVisible(chromedp.ID("revoke-credential")),
			chromedp.Click(chromedp.ID("revoke-credential-submit")),
		)
		tb.waitText(".flash", "The credential of node e2e-node is revoked")
		select {
		case <-agent.exited:
		case <-time.After(30 * time.Second):
			t.Fatal("the agent was not disconnected")
		}
		if out := agent.out.String(); !strings.Contains(out, "join again with a new invite") {
			t.Errorf("the agent's output does not say its credential was refused:\n%s", out)
		}

		tb.open("/nodes/" + n.ID + "/remove")
		tb.do("removing the node",
			chromedp.WaitVisible(chromedp.ID("remove-node")),
			chromedp.Click(chromedp.ID("remove-node-submit")),
		)
		tb.waitText(".flash", "Node e2e-node is removed.")
		if nodeByName(t, s.URL, c.Token, "e2e-node") != nil {
			t.Error("the removed node is still listed")
		}
	})
}
