package offload_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/offload"
)

// An offloader keeps a large result with the chat scope, gives the memory
// its stub, and reads a range of it back, as the read_result tool does.
// (In an application it is a tool source of the AI services: the service
// calls OffloadResult, the model calls read_result.)
func Example() {
	off := offload.New(&offload.Options{Threshold: 64, Preview: 9})
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer chat.End(ctx)

	result := "anvil: ok\nbellows: ok\nquench tank: low\n" + strings.Repeat("tongs: ok\n", 10)
	prompt, kept := off.OffloadResult(ctx, ai.ToolExecution{ID: "call_1", Name: "inspect_forge", Text: result})
	fmt.Println(prompt == result) // the turn's own model calls read it whole

	var stub struct {
		ID      string `json:"offloaded"`
		Bytes   int    `json:"bytes"`
		Lines   int    `json:"lines"`
		Preview string `json:"preview"`
	}
	if err := json.Unmarshal([]byte(kept), &stub); err != nil {
		log.Fatal(err)
	}
	fmt.Println(stub.Bytes, stub.Lines, stub.Preview) // the memory's stub

	part, err := off.Read(ctx, stub.ID, offload.Range{Line: 3, Lines: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q more=%v\n", part.Text, part.More)
	// Output:
	// true
	// 139 13 anvil: ok
	// "quench tank: low\n" more=true
}
