package layout

// Frame is what the shared frame shows around every page: who is signed
// in, where, the navigation and a one-time message. Handlers get it from
// app.Router.Frame.
type Frame struct {
	Title      string
	SignedIn   bool
	UserEmail  string
	TenantName string
	// Inside is a superadmin acting inside a tenant: every page shows a
	// banner with a way out.
	Inside  bool
	CSRF    string
	Flash   string
	Nav     []Link
	Current string // the path of the page, to mark its nav link
	Version string
}

// Link is one navigation link.
type Link struct {
	Label string
	Href  string
}

// Active reports whether l is the link of the current page or one of its
// sub-pages.
func (f Frame) Active(l Link) bool {
	return f.Current == l.Href || (len(f.Current) > len(l.Href) && f.Current[:len(l.Href)+1] == l.Href+"/")
}
