// Renders an Ollama Modelfile's TEMPLATE the way Ollama does (Go's text/template over .Messages, each with .Role
// and .Content), for the test that checks one chat template across training, the merged model, the GGUF and the
// Modelfile. Reads {"template": "...", "messages": [[{"role","content"}...]...]} on stdin; writes a JSON array of
// the rendered prompts on stdout. Standard library only.
package main

import (
	"encoding/json"
	"os"
	"strings"
	"text/template"
)

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type input struct {
	Template string      `json:"template"`
	Messages [][]message `json:"messages"`
}

func main() {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		panic(err)
	}
	tmpl := template.Must(template.New("modelfile").Parse(in.Template))
	rendered := make([]string, 0, len(in.Messages))
	for _, conversation := range in.Messages {
		var out strings.Builder
		if err := tmpl.Execute(&out, map[string]any{"Messages": conversation}); err != nil {
			panic(err)
		}
		rendered = append(rendered, out.String())
	}
	if err := json.NewEncoder(os.Stdout).Encode(rendered); err != nil {
		panic(err)
	}
}
