package flat

import "github.com/tmc/langchaingo/llms"

func toolCallName(p llms.ContentPart) (string, bool) {
	tc, ok := p.(llms.ToolCall)
	if !ok || tc.FunctionCall == nil {
		return "", false
	}
	return tc.FunctionCall.Name, true
}
