//go:build ignore

package main

import (
	"log"
	"strings"

	"entgo.io/contrib/entgql"
	"entgo.io/ent/entc"
	"entgo.io/ent/entc/gen"
	"github.com/vektah/gqlparser/v2/ast"
)

func main() {
	ex, err := entgql.NewExtension(
		// Templates first: WithWhereInputs adds to the list they set.
		entgql.WithTemplates(
			entgql.CollectionTemplate,
			entgql.EnumTemplate,
			entgql.NodeTemplate,
			override("template/gql_pagination.tmpl"),
			entgql.TransactionTemplate,
			entgql.EdgeTemplate,
			override("template/gql_mutation_input.tmpl"),
		),
		entgql.WithSchemaGenerator(),
		entgql.WithWhereInputs(true),
		entgql.WithRelaySpec(true),
		entgql.WithConfigPath("../gqlgen.yml"),
		entgql.WithSchemaPath("../graph/schema/ent.graphqls"),
		entgql.WithSchemaHook(dropRelayNodes),
	)
	if err != nil {
		log.Fatalf("creating entgql extension: %v", err)
	}
	err = entc.Generate("./schema", &gen.Config{
		Features: []gen.Feature{
			gen.FeaturePrivacy,
			gen.FeatureEntQL,
			gen.FeatureIntercept,
			gen.FeatureExecQuery,
			gen.FeatureUpsert,
			gen.FeatureLock,
		},
	}, entc.Extensions(ex))
	if err != nil {
		log.Fatalf("running ent codegen: %v", err)
	}
}

// override parses one of our copies of an entgql template (see the
// "levers9:" comments in them for what differs from upstream).
func override(path string) *gen.Template {
	return gen.MustParse(gen.NewTemplate(path).Funcs(entgql.TemplateFuncs).ParseFiles(path))
}

// dropRelayNodes removes Relay's `nodes(ids:)` lookup: in levers9, `nodes` is
// the connection of compute nodes, a word the product cannot give up.
func dropRelayNodes(_ *gen.Graph, s *ast.Schema) error {
	q := s.Types["Query"]
	var kept ast.FieldList
	for _, f := range q.Fields {
		if f.Name == "nodes" && f.Arguments.ForName("ids") != nil {
			continue
		}
		kept = append(kept, f)
	}
	q.Fields = kept
	// JSON object fields are output types; their mutation inputs need the
	// matching input types declared in graph/schema.
	inputs := map[string]string{"GPURate": "GPURateInput"}
	for _, def := range s.Types {
		if def.Kind != ast.InputObject {
			continue
		}
		for _, f := range def.Fields {
			t := f.Type
			for t.Elem != nil {
				t = t.Elem
			}
			// entgql writes list types as one name ("[GPURate!]").
			name := strings.Trim(t.NamedType, "[]!")
			if in, ok := inputs[name]; ok {
				t.NamedType = strings.Replace(t.NamedType, name, in, 1)
			}
		}
	}
	return nil
}
