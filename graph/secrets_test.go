package graph_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/secrets"
)

func withSecrets(t testing.TB) func(*graph.Resolver) {
	return func(r *graph.Resolver) {
		keys, err := secrets.NewKeyring(bytes.Repeat([]byte{7}, 32))
		if err != nil {
			t.Fatal(err)
		}
		r.Secrets = &secrets.Service{DB: r.DB, Log: r.Log, Keys: keys, Now: time.Now}
	}
}

const (
	createSecretQ = `mutation($i: CreateSecretInput!) { createSecret(input: $i) { id name keys createdAt updatedAt } }`
	secretsQ      = `{ secrets(first: 100) { totalCount edges { node { id name keys ownerID createdAt updatedAt } } } }`
	deleteSecretQ = `mutation($id: ID!) { deleteSecret(id: $id) }`
)

// The value given never comes back: not in the answer to createSecret,
// not in the secrets list; another tenant neither sees nor deletes it.
func TestSecrets(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url, withSecrets(t))
		a, b := e.newTenant("seca"), e.newTenant("secb")
		const value = "hf_tOpS3cretValue"
		in := vars{"name": "hf", "values": []vars{{"key": "HF_TOKEN", "value": value}, {"key": "A_USER", "value": "bob-the-user"}}}
		r := e.gql(a.memberToken, createSecretQ, vars{"i": in})
		r.ok(t)
		var out struct {
			CreateSecret struct {
				ID, Name string
				Keys     []string
			}
		}
		r.decode(t, &out)
		if s := out.CreateSecret; s.Name != "hf" || len(s.Keys) != 2 || s.Keys[0] != "A_USER" || s.Keys[1] != "HF_TOKEN" {
			t.Errorf("createSecret: %s", r.Data)
		}
		id := out.CreateSecret.ID
		list := e.gql(a.memberToken, secretsQ, nil)
		list.ok(t)
		for _, resp := range []response{r, list} {
			for _, v := range []string{value, "bob-the-user"} {
				if bytes.Contains(resp.Data, []byte(v)) {
					t.Errorf("a value came back: %s", resp.Data)
				}
			}
		}
		if !bytes.Contains(list.Data, []byte("HF_TOKEN")) || !bytes.Contains(list.Data, []byte(id)) {
			t.Errorf("secrets lacks hf's keys: %s", list.Data)
		}

		// A second create is refused unless it replaces; a key twice is
		// bad input naming it.
		if r := e.gql(a.memberToken, createSecretQ, vars{"i": in}); r.code() == "" {
			t.Errorf("createSecret of an existing name: %s", r.Data)
		}
		in["replace"] = true
		e.gql(a.memberToken, createSecretQ, vars{"i": in}).ok(t)
		twice := vars{"name": "dup", "values": []vars{{"key": "K", "value": "1"}, {"key": "K", "value": "2"}}}
		if r := e.gql(a.memberToken, createSecretQ, vars{"i": twice}); r.code() != "BAD_USER_INPUT" || r.Errors[0].Extensions["field"] != "values[1].key" {
			t.Errorf("a key twice: %+v", r.Errors)
		}

		// Another tenant sees none and deletes none.
		if r := e.gql(b.adminToken, secretsQ, nil); bytes.Contains(r.Data, []byte(id)) || len(r.Errors) > 0 {
			t.Errorf("another tenant's list: %s %+v", r.Data, r.Errors)
		}
		for _, ref := range []string{id, "hf"} {
			if r := e.gql(b.adminToken, deleteSecretQ, vars{"id": ref}); r.code() != "NOT_FOUND" {
				t.Errorf("another tenant deletes %s: %s %+v", ref, r.Data, r.Errors)
			}
		}

		r = e.gql(a.adminToken, deleteSecretQ, vars{"id": "hf"})
		r.ok(t)
		if !bytes.Contains(r.Data, []byte(id)) {
			t.Errorf("deleteSecret: %s", r.Data)
		}
		if r := e.gql(a.memberToken, secretsQ, nil); bytes.Contains(r.Data, []byte(id)) {
			t.Errorf("deleted secret still listed: %s", r.Data)
		}
	})
}
