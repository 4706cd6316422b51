package a2atools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// CardPath is where an agent's Agent Card is found, relative to its base
// URL.
const CardPath = ".well-known/agent-card.json"

// maxCardBytes bounds the card read.
const maxCardBytes = 1 << 20

// Versions of A2A this client speaks.
const (
	// Version1 is A2A 1.0: SendMessage and SendStreamingMessage, proto-JSON,
	// with an A2A-Version: 1.0 header; spoken by this package's own client.
	Version1 = "1.0"
	// Version03 is A2A 0.3: message/send and message/stream; spoken through
	// a2a-go's client (github.com/a2aproject/a2a-go/a2aclient).
	Version03 = "0.3"
)

// card is what this client reads of an Agent Card, in the form of 1.0
// (supportedInterfaces) or of 0.3 (url, preferredTransport,
// additionalInterfaces).
type card struct {
	Name                string `json:"name"`
	Description         string `json:"description"`
	SupportedInterfaces []struct {
		URL             string `json:"url"`
		ProtocolBinding string `json:"protocolBinding"`
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"supportedInterfaces"`
	URL                  string `json:"url"`
	PreferredTransport   string `json:"preferredTransport"`
	ProtocolVersion      string `json:"protocolVersion"`
	AdditionalInterfaces []struct {
		URL       string `json:"url"`
		Transport string `json:"transport"`
	} `json:"additionalInterfaces"`
	Capabilities struct {
		Streaming bool `json:"streaming"`
	} `json:"capabilities"`
	Skills []struct {
		Name        string   `json:"name"`
		Description string   `json:"description"`
		Examples    []string `json:"examples"`
	} `json:"skills"`
}

// endpoint is the interface of the card this client talks to.
type endpoint struct {
	url     string
	version string // Version1 or Version03
}

// cardURL returns where the card of the agent at base is.
func cardURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%q is not an http or https URL", base)
	}
	if strings.HasSuffix(u.Path, "/"+CardPath) {
		return u.String(), nil
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/" // a base URL with a path is a folder
	}
	return u.ResolveReference(&url.URL{Path: CardPath}).String(), nil
}

// fetchCard reads the card at u with client, bounded to maxCardBytes.
func fetchCard(ctx context.Context, client *http.Client, u string) (*card, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: fetching its card: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("%w: fetching its card %s: HTTP status %s", ErrUnavailable, u, resp.Status)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxCardBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: reading its card: %w", ErrUnavailable, err)
	}
	if len(raw) > maxCardBytes {
		return nil, nil, fmt.Errorf("%w: its card %s is over %d bytes", ErrInvalidCard, u, maxCardBytes)
	}
	var c card
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, nil, fmt.Errorf("%w: %s is not an Agent Card: %w", ErrInvalidCard, u, err)
	}
	if c.Name == "" {
		return nil, nil, fmt.Errorf("%w: the card %s has no name", ErrInvalidCard, u)
	}
	return &c, raw, nil
}

// choose returns the JSON-RPC interface of the card to talk to: A2A 1.0's
// when the card offers it, else 0.3's; only version's when version is
// not "". A relative URL is resolved against the card's.
func (c *card) choose(version, cardAt string) (endpoint, error) {
	var found []endpoint
	for _, in := range c.SupportedInterfaces {
		if !strings.EqualFold(in.ProtocolBinding, "JSONRPC") || in.URL == "" {
			continue
		}
		switch v := in.ProtocolVersion; {
		case v == "1" || strings.HasPrefix(v, "1."):
			found = append(found, endpoint{url: in.URL, version: Version1})
		case strings.HasPrefix(v, "0.3"):
			found = append(found, endpoint{url: in.URL, version: Version03})
		}
	}
	if c.URL != "" && (c.PreferredTransport == "" || strings.EqualFold(c.PreferredTransport, "JSONRPC")) {
		found = append(found, endpoint{url: c.URL, version: Version03})
	}
	for _, in := range c.AdditionalInterfaces {
		if strings.EqualFold(in.Transport, "JSONRPC") && in.URL != "" {
			found = append(found, endpoint{url: in.URL, version: Version03})
		}
	}
	for _, want := range []string{Version1, Version03} {
		if version != "" && version != want {
			continue
		}
		for _, e := range found {
			if e.version != want {
				continue
			}
			u, err := resolve(cardAt, e.url)
			if err != nil {
				return endpoint{}, fmt.Errorf("%w: its %s interface URL %q: %w", ErrInvalidCard, want, e.url, err)
			}
			e.url = u
			return e, nil
		}
	}
	if version != "" {
		return endpoint{}, fmt.Errorf("%w: the card offers no JSON-RPC interface of A2A %s", ErrInvalidCard, version)
	}
	return endpoint{}, fmt.Errorf("%w: the card offers no JSON-RPC interface of A2A 1.0 or 0.3", ErrInvalidCard)
}

// resolve resolves ref against base and checks it is http or https.
func resolve(base, ref string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", err
	}
	u := b.ResolveReference(r)
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("not an http or https URL")
	}
	return u.String(), nil
}

// toolName is the name the model calls the agent by: the card's name, its
// characters outside a tool name's replaced by '_'.
func toolName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	n := b.String()
	if n == "" || (n[0] >= '0' && n[0] <= '9') || n[0] == '-' {
		n = "agent_" + n
	}
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// validName is what every model provider accepts as a tool name (see
// runtime/mcptools).
var validName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$`)

// description tells the model what the agent does: the card's
// description and its skills.
func (c *card) description() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Asks the remote agent %q (over A2A). ", c.Name)
	if d := strings.TrimSpace(c.Description); d != "" {
		b.WriteString(d)
		if !strings.HasSuffix(d, ".") {
			b.WriteByte('.')
		}
	}
	if len(c.Skills) > 0 {
		b.WriteString("\nIts skills:")
		for _, s := range c.Skills {
			fmt.Fprintf(&b, "\n- %s", s.Name)
			if s.Description != "" {
				fmt.Fprintf(&b, ": %s", s.Description)
			}
		}
	}
	b.WriteString("\nSend it a message in plain language; it remembers the conversation, so a later call can refer to earlier ones (set new_conversation to start over). When it asks a question, answer it with the next call.")
	return b.String()
}
