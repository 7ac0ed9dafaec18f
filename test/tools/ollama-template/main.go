// Renders an Ollama Modelfile's TEMPLATE the way Ollama does (Go's text/template with missingkey=zero and Ollama's
// one function, json, over .Messages and .Tools), for the tests that check one chat template across training, the
// merged model, the GGUF and the Modelfile. Reads {"template": "...", "messages": [[message...]...], "tools":
// [[tool...] or null...]} on stdin, messages in OpenAI's shape (a tool call's arguments a JSON string, which Ollama
// holds as an object); writes a JSON array of the rendered prompts on stdout. Standard library only.
package main

import (
	"encoding/json"
	"os"
	"strings"
	"text/template"
)

type callFunction struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

type toolCall struct {
	Function callFunction `json:"function"`
}

type message struct {
	Role      string     `json:"role"`
	Content   string     `json:"content"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
}

// What the request holds: OpenAI's message, whose call arguments are a JSON string.
type openAIMessage struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	ToolCalls []struct {
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type input struct {
	Template string             `json:"template"`
	Messages [][]openAIMessage  `json:"messages"`
	Tools    [][]map[string]any `json:"tools"`
}

// Ollama's template functions (template/template.go).
var funcs = template.FuncMap{
	"json": func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	},
}

func ollamaMessages(conversation []openAIMessage) []*message {
	out := make([]*message, 0, len(conversation))
	for _, m := range conversation {
		converted := &message{Role: m.Role, Content: m.Content}
		for _, call := range m.ToolCalls {
			var arguments map[string]any
			if err := json.Unmarshal([]byte(call.Function.Arguments), &arguments); err != nil {
				panic(err)
			}
			converted.ToolCalls = append(converted.ToolCalls, toolCall{Function: callFunction{Name: call.Function.Name, Arguments: arguments}})
		}
		out = append(out, converted)
	}
	return out
}

func main() {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		panic(err)
	}
	tmpl := template.Must(template.New("modelfile").Option("missingkey=zero").Funcs(funcs).Parse(in.Template))
	rendered := make([]string, 0, len(in.Messages))
	for i, conversation := range in.Messages {
		var tools []map[string]any
		if i < len(in.Tools) {
			tools = in.Tools[i]
		}
		var out strings.Builder
		if err := tmpl.Execute(&out, map[string]any{"Messages": ollamaMessages(conversation), "Tools": tools}); err != nil {
			panic(err)
		}
		rendered = append(rendered, out.String())
	}
	if err := json.NewEncoder(os.Stdout).Encode(rendered); err != nil {
		panic(err)
	}
}
