package runnerapi

import (
	"encoding/base64"
	"strconv"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/functions"
)

// payloadJSON is a pickle: data (standard base64) or blob (hex SHA-256).
type payloadJSON struct {
	Data *string `json:"data,omitempty"`
	Blob string  `json:"blob,omitempty"`
}

// in decodes a payload; whether it is valid (one of the two, small enough,
// the blob uploaded) is the domain's to say.
func (p *payloadJSON) in(field string) (functions.Payload, error) {
	out := functions.Payload{Blob: p.Blob}
	if p.Data != nil {
		if base64.StdEncoding.DecodedLen(len(*p.Data)) > functions.InlineLimit+2 {
			return out, fault.Invalid(field+".data", "inline payloads are at most %d bytes: upload it as a blob", functions.InlineLimit)
		}
		b, err := base64.StdEncoding.DecodeString(*p.Data)
		if err != nil {
			return out, fault.Invalid(field+".data", "not standard base64: %v", err)
		}
		if b == nil {
			b = []byte{}
		}
		out.Data = b
	}
	return out, nil
}

func payloadOut(p *functions.Payload) *payloadJSON {
	if p == nil {
		return nil
	}
	if p.Blob != "" {
		return &payloadJSON{Blob: p.Blob}
	}
	s := base64.StdEncoding.EncodeToString(p.Data)
	return &payloadJSON{Data: &s}
}

// taskJSON is a call, with GraphQL's field names.
type taskJSON struct {
	ID             string       `json:"id"`
	State          string       `json:"state"`
	MapIndex       int          `json:"mapIndex"`
	Attempt        int          `json:"attempt"`
	Result         *payloadJSON `json:"result"`
	ErrorKind      string       `json:"errorKind"`
	ErrorMessage   string       `json:"errorMessage"`
	ErrorTraceback string       `json:"errorTraceback"`
	ErrorException *string      `json:"errorException"`
}

func taskOut(t *ent.Task) taskJSON {
	out := taskJSON{ID: t.ID, State: t.State.String(), MapIndex: t.MapIndex, Attempt: t.Attempt,
		Result: payloadOut(functions.ResultOf(t))}
	if f := functions.FailureOf(t); f != nil {
		out.ErrorKind, out.ErrorMessage, out.ErrorTraceback = f.Kind, f.Message, f.Traceback
		if len(f.Exception) > 0 {
			s := base64.StdEncoding.EncodeToString(f.Exception)
			out.ErrorException = &s
		}
	}
	return out
}

func tasksOut(ts []*ent.Task) []taskJSON {
	out := make([]taskJSON, len(ts))
	for i, t := range ts {
		out[i] = taskOut(t)
	}
	return out
}

// mapJSON is a map, with GraphQL's field names.
type mapJSON struct {
	ID         string     `json:"id"`
	Total      int        `json:"total"`
	Succeeded  int        `json:"succeeded"`
	Failed     int        `json:"failed"`
	FinishedAt *time.Time `json:"finishedAt"`
}

func mapOut(m *ent.FunctionMap) mapJSON {
	return mapJSON{ID: m.ID, Total: m.Total, Succeeded: m.Succeeded, Failed: m.Failed, FinishedAt: m.FinishedAt}
}

type functionJSON struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	App            string `json:"app"` // its ID
	Module         string `json:"module"`
	Qualname       string `json:"qualname"`
	Concurrency    int    `json:"concurrency"`
	TimeoutSeconds int    `json:"timeoutSeconds"`
	// Kind (FUNCTION, ENDPOINT, ASGI, REALTIME, TASK_QUEUE, CRON) says how
	// the runner calls it; HTTPMethod is an endpoint's ("" for any).
	Kind       string `json:"kind"`
	HTTPMethod string `json:"httpMethod"`
}

type phasesJSON struct {
	CodeFetchedAt    *time.Time `json:"codeFetchedAt"`
	ImageReadyAt     *time.Time `json:"imageReadyAt"`
	ProcessStartedAt *time.Time `json:"processStartedAt"`
	ImportedAt       *time.Time `json:"importedAt"`
}

type failureJSON struct {
	Kind      string  `json:"kind"`
	Message   string  `json:"message"`
	Traceback string  `json:"traceback"`
	Exception *string `json:"exception"`
}

type outcomeJSON struct {
	Task       string       `json:"task"`
	Attempt    int          `json:"attempt"`
	StartedAt  *time.Time   `json:"startedAt"`
	FinishedAt *time.Time   `json:"finishedAt"`
	Result     *payloadJSON `json:"result"`
	Failure    *failureJSON `json:"failure"`
}

type claimRequest struct {
	Max    int           `json:"max"`
	WaitMs int64         `json:"waitMs"`
	Phases *phasesJSON   `json:"phases"`
	Done   []outcomeJSON `json:"done"`
}

type claimedJSON struct {
	ID             string      `json:"id"`
	Attempt        int         `json:"attempt"`
	TimeoutSeconds int         `json:"timeoutSeconds"`
	Args           payloadJSON `json:"args"`
	// Source is CALL, QUEUE (pickled args), HTTP (args are the JSON
	// request envelope) or CRON (no args: fn() is called).
	Source string `json:"source"`
}

type claimResponse struct {
	Tasks []claimedJSON `json:"tasks"`
	Exit  bool          `json:"exit"`
}

// request turns a claim into the domain's: payloads decoded, times read.
func (c *claimRequest) request() (functions.ClaimRequest, error) {
	if c.Max < 0 {
		return functions.ClaimRequest{}, fault.Invalid("max", "must not be negative")
	}
	w, err := wait(c.WaitMs)
	if err != nil {
		return functions.ClaimRequest{}, err
	}
	req := functions.ClaimRequest{Max: c.Max, Wait: w, Done: make([]functions.Outcome, len(c.Done))}
	if p := c.Phases; p != nil {
		req.Phases = functions.Phases{CodeFetchedAt: at(p.CodeFetchedAt), ImageReadyAt: at(p.ImageReadyAt),
			ProcessStartedAt: at(p.ProcessStartedAt), ImportedAt: at(p.ImportedAt)}
	}
	for i, d := range c.Done {
		field := "done[" + strconv.Itoa(i) + "]"
		if d.Task == "" {
			return req, fault.Invalid(field+".task", "is required")
		}
		o := functions.Outcome{TaskID: d.Task, Attempt: d.Attempt, StartedAt: at(d.StartedAt), FinishedAt: at(d.FinishedAt)}
		if d.Result != nil {
			p, err := d.Result.in(field + ".result")
			if err != nil {
				return req, err
			}
			o.Result = &p
		}
		if f := d.Failure; f != nil {
			o.Failure = &functions.Failure{Kind: f.Kind, Message: f.Message, Traceback: f.Traceback}
			if f.Exception != nil {
				b, err := base64.StdEncoding.DecodeString(*f.Exception)
				if err != nil {
					return req, fault.Invalid(field+".failure.exception", "not standard base64: %v", err)
				}
				o.Failure.Exception = b
			}
		}
		req.Done[i] = o
	}
	return req, nil
}

func at(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
