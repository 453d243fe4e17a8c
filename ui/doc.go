// How to add a dashboard page
//
//  1. Make a package per page area under ui/ (ui/nodes, ui/admin/queues, …)
//     with a .templ file for the markup and a .go file for the handlers.
//     Wrap content in layout.Page(rt.Frame(r, "Title")); use components
//     (Input, Select, FieldErrors, ErrorSummary, Pager, CSRF, Status) for
//     forms and lists.
//  2. Export Register(rt *app.Router) and call rt.Handle("GET /nodes",
//     app.Admin, h.list) for each route, with the access level it needs
//     (app.Public, SignedIn, Member, Admin, Superadmin), and rt.Nav(...) for
//     a navigation link. Call Register from Routes in ui/ui.go.
//  3. Handlers return an error: domain faults become 400/403/404 pages,
//     anything else a logged 500. They act as the session's viewer
//     (r.Context()), so ent privacy filters every query: call the same
//     domain functions GraphQL calls, never bypass them with a system
//     context. Forms that change state use POST with @components.CSRF(f.CSRF);
//     the router refuses them without the token or from another origin.
//     Multipart forms put the token in the action's query (?csrf=…). After
//     a successful post, rt.Flash(r, "…") and app.SeeOther; lists page with
//     app.ParsePaging and app.PageLinks over ent's Paginate.
//  4. Regenerate templ code for ui only and commit it:
//     go run github.com/a-h/templ/cmd/templ generate -path ui
//  5. Test handlers in-process with the harness in ui/harness_test.go
//     (newEnv, browser: signIn, get, post) on SQLite and PostgreSQL, and
//     in Chromium with the tab helpers of e2e/browser_test.go.
package ui
