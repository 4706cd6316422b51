package a2aserver

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// A skill is the card's entry of one route.
type skill struct {
	id, description string
	tags            []string
}

// skillsOf returns the skills of the routes of m.
func skillsOf(m *chatimpl.Manifest) []skill {
	out := make([]skill, 0, len(m.Routes))
	for _, ri := range m.Routes {
		tags := []string{"chat-route"}
		if ri.Default {
			tags = append(tags, "default")
		}
		if ri.Streaming {
			tags = append(tags, "streaming")
		}
		out = append(out, skill{id: ri.Name, description: describe(ri), tags: tags})
	}
	return out
}

// describe is the description of the skill of route ri.
func describe(ri chatimpl.RouteInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The chat route %q", ri.Name)
	if ri.Default {
		b.WriteString(" (the default route)")
	}
	b.WriteString(". A context is a conversation: each message is its next request, and its state is kept between them")
	var params []string
	for _, p := range ri.Params {
		if p.Name == protocol.KeyUserMessage {
			params = append(params, "the text parts are the user's message")
		} else {
			params = append(params, fmt.Sprintf("%q", p.Name))
		}
	}
	if len(params) > 0 {
		b.WriteString("; parameters (keys of a data part): " + strings.Join(params, ", "))
	}
	b.WriteString(".")
	return b.String()
}

// describeAgent is the card's default description.
func describeAgent(skills []skill) string {
	names := make([]string, len(skills))
	for i, s := range skills {
		names[i] = s.id
	}
	return "A chatgen application: the chat routes " + strings.Join(names, ", ") + ", one conversation per context."
}

// agentInterface1 is an AgentInterface of a 1.0 card.
type agentInterface1 struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

// A card is one Agent Card for both versions: the 0.3 fields (url,
// protocolVersion, preferredTransport), which 0.3 clients read, and
// supportedInterfaces, which 1.0 clients read (and which make them take
// the card for a 1.0 one).
type card struct {
	a2a.AgentCard
	SupportedInterfaces []agentInterface1 `json:"supportedInterfaces"`
}

// cardFor returns the card, its endpoint being url.
func (h *Handler) cardFor(url string) *card {
	modes := []string{"text/plain", "application/json"}
	c := &card{AgentCard: a2a.AgentCard{
		Name:               h.opts.Name,
		Description:        h.opts.Description,
		Version:            h.opts.Version,
		URL:                url,
		ProtocolVersion:    "0.3.0",
		PreferredTransport: a2a.TransportProtocolJSONRPC,
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  modes,
		DefaultOutputModes: modes,
		Skills:             make([]a2a.AgentSkill, 0, len(h.skills)),
	}, SupportedInterfaces: []agentInterface1{
		{URL: url, ProtocolBinding: "JSONRPC", ProtocolVersion: version1},
		{URL: url, ProtocolBinding: "JSONRPC", ProtocolVersion: version03},
	}}
	for _, s := range h.skills {
		c.Skills = append(c.Skills, a2a.AgentSkill{ID: s.id, Name: s.id, Description: s.description, Tags: s.tags,
			InputModes: modes, OutputModes: modes})
	}
	return c
}

// serveCard answers the Agent Card.
func (h *Handler) serveCard(w http.ResponseWriter, r *http.Request) {
	url := h.opts.URL
	if url == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		url = scheme + "://" + r.Host + strings.TrimSuffix(r.URL.Path, CardPath) + "/"
	}
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, http.StatusOK, h.cardFor(url))
}
