package runnerapi

import (
	"io"
	"net/http"
	"strconv"

	"github.com/levers9/levers9/internal/blobs"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/functions"
)

func (a *API) function(w http.ResponseWriter, r *http.Request) {
	f, err := a.fn.Describe(r.Context(), runnerOf(r.Context()))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, http.StatusOK, functionJSON{ID: f.ID, Name: f.Name, App: f.AppID, Module: f.Module, Qualname: f.Qualname,
		Concurrency: f.Concurrency, TimeoutSeconds: f.TimeoutSeconds, Kind: f.Kind.String(), HTTPMethod: f.HTTPMethod})
}

func (a *API) claim(w http.ResponseWriter, r *http.Request) {
	var body claimRequest
	if err := decode(w, r, maxLargeBody, &body); err != nil {
		a.fail(w, r, err)
		return
	}
	req, err := body.request()
	if err != nil {
		a.fail(w, r, err)
		return
	}
	claimed, exit, err := a.fn.Claim(r.Context(), runnerOf(r.Context()), req)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := claimResponse{Tasks: make([]claimedJSON, len(claimed)), Exit: exit}
	for i, c := range claimed {
		out.Tasks[i] = claimedJSON{ID: c.ID, Attempt: c.Attempt, TimeoutSeconds: c.TimeoutSeconds, Args: *payloadOut(&c.Args), Source: c.Source.String()}
	}
	a.reply(w, http.StatusOK, out)
}

func (a *API) putBlob(w http.ResponseWriter, r *http.Request) {
	if a.blobs == nil {
		a.fail(w, r, fault.New(fault.Unavailable, "this server keeps no blobs"))
		return
	}
	ctx := runnerOf(r.Context()).Context(r.Context())
	created, err := a.blobs.Put(ctx, blobs.KindPayload, r.PathValue("hash"), r.Body, r.ContentLength)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	w.WriteHeader(status)
}

func (a *API) getBlob(w http.ResponseWriter, r *http.Request) {
	if a.blobs == nil {
		a.fail(w, r, fault.New(fault.Unavailable, "this server keeps no blobs"))
		return
	}
	ctx := runnerOf(r.Context()).Context(r.Context())
	rc, size, err := a.blobs.Open(ctx, r.PathValue("hash"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	if _, err := io.Copy(w, rc); err != nil {
		a.log.Debug("runner API: sending a blob", "err", err)
	}
}

type callRequest struct {
	Function string      `json:"function"`
	Args     payloadJSON `json:"args"`
}

func (a *API) call(w http.ResponseWriter, r *http.Request) {
	var body callRequest
	if err := decode(w, r, maxCallBody, &body); err != nil {
		a.fail(w, r, err)
		return
	}
	p, err := body.Args.in("args")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	t, err := a.fn.RunnerCall(r.Context(), runnerOf(r.Context()), body.Function, p)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, http.StatusOK, taskOut(t))
}

type putRequest struct {
	Function       string      `json:"function"`
	Item           payloadJSON `json:"item"`
	IdempotencyKey string      `json:"idempotencyKey"`
}

func (a *API) put(w http.ResponseWriter, r *http.Request) {
	var body putRequest
	if err := decode(w, r, maxCallBody, &body); err != nil {
		a.fail(w, r, err)
		return
	}
	p, err := body.Item.in("item")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	t, err := a.fn.RunnerPut(r.Context(), runnerOf(r.Context()), body.Function, p, body.IdempotencyKey)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, http.StatusOK, taskOut(t))
}

type mapRequest struct {
	Function string        `json:"function"`
	Items    []payloadJSON `json:"items"`
}

func (a *API) mapItems(w http.ResponseWriter, r *http.Request) {
	var body mapRequest
	if err := decode(w, r, maxLargeBody, &body); err != nil {
		a.fail(w, r, err)
		return
	}
	if len(body.Items) > functions.MaxMapItems {
		a.fail(w, r, fault.Invalid("items", "at most %d items per request (got %d)", functions.MaxMapItems, len(body.Items)))
		return
	}
	items := make([]functions.Payload, len(body.Items))
	for i := range body.Items {
		p, err := body.Items[i].in("items[" + strconv.Itoa(i) + "]")
		if err != nil {
			a.fail(w, r, err)
			return
		}
		items[i] = p
	}
	m, err := a.fn.RunnerMap(r.Context(), runnerOf(r.Context()), body.Function, items)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, http.StatusOK, mapOut(m))
}

type awaitRequest struct {
	Task   string `json:"task"`
	WaitMs int64  `json:"waitMs"`
}

func (a *API) await(w http.ResponseWriter, r *http.Request) {
	var body awaitRequest
	if err := decode(w, r, maxSmallBody, &body); err != nil {
		a.fail(w, r, err)
		return
	}
	d, err := wait(body.WaitMs)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	t, err := a.fn.RunnerAwait(r.Context(), runnerOf(r.Context()), body.Task, d)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, http.StatusOK, taskOut(t))
}

type mapResultsRequest struct {
	Map    string `json:"map"`
	From   int    `json:"from"`
	Limit  int    `json:"limit"`
	WaitMs int64  `json:"waitMs"`
}

type mapResultsResponse struct {
	Map   mapJSON    `json:"map"`
	Tasks []taskJSON `json:"tasks"`
}

func (a *API) mapResults(w http.ResponseWriter, r *http.Request) {
	var body mapResultsRequest
	if err := decode(w, r, maxSmallBody, &body); err != nil {
		a.fail(w, r, err)
		return
	}
	d, err := wait(body.WaitMs)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	m, ts, err := a.fn.RunnerMapResults(r.Context(), runnerOf(r.Context()), body.Map, body.From, body.Limit, d)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, http.StatusOK, mapResultsResponse{Map: mapOut(m), Tasks: tasksOut(ts)})
}

type cancelRequest struct {
	Task string `json:"task"`
}

func (a *API) cancel(w http.ResponseWriter, r *http.Request) {
	var body cancelRequest
	if err := decode(w, r, maxSmallBody, &body); err != nil {
		a.fail(w, r, err)
		return
	}
	t, err := a.fn.RunnerCancel(r.Context(), runnerOf(r.Context()), body.Task)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, http.StatusOK, taskOut(t))
}
