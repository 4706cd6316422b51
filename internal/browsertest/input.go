//go:build unix

package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// SetViewport makes the page's viewport width×height CSS pixels (mobile
// emulates a phone: the viewport meta tag applies, touch events). It also
// turns on focus emulation, so that the page behaves as the focused window
// for keyboard tests although the browser is headless.
func (p *Page) SetViewport(ctx context.Context, width, height int, mobile bool) error {
	if _, err := p.b.call(ctx, p.session, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile,
	}); err != nil {
		return err
	}
	_, err := p.b.call(ctx, p.session, "Emulation.setFocusEmulationEnabled", map[string]any{"enabled": true})
	return err
}

// Capture captures the page as a PNG at its current viewport (see
// SetViewport), unlike Screenshot, which sets its own.
func (p *Page) Capture(ctx context.Context) ([]byte, error) {
	res, err := p.b.call(ctx, p.session, "Page.captureScreenshot", map[string]any{"format": "png"})
	if err != nil {
		return nil, err
	}
	var shot struct {
		Data []byte `json:"data"`
	}
	if err := json.Unmarshal(res, &shot); err != nil {
		return nil, err
	}
	return shot.Data, nil
}

// keys are the keys Press knows: their DevTools key, code, key code and
// the text they type.
var keys = map[string]struct {
	key, code string
	keyCode   int
	text      string
}{
	"Tab":       {"Tab", "Tab", 9, ""},
	"Enter":     {"Enter", "Enter", 13, "\r"},
	"Space":     {" ", "Space", 32, " "},
	"Escape":    {"Escape", "Escape", 27, ""},
	"Backspace": {"Backspace", "Backspace", 8, ""},
}

// Press presses and releases a key, as a keyboard does: "Tab", "Enter",
// "Space", "Escape" or "Backspace", optionally after "Shift+" (so
// "Shift+Tab" moves the focus backwards).
func (p *Page) Press(ctx context.Context, key string) error {
	modifiers := 0
	name := key
	if rest, ok := strings.CutPrefix(key, "Shift+"); ok {
		modifiers, name = 8, rest
	}
	k, ok := keys[name]
	if !ok {
		return fmt.Errorf("browsertest: Press does not know the key %q", key)
	}
	down := map[string]any{
		"type": "keyDown", "key": k.key, "code": k.code, "modifiers": modifiers,
		"windowsVirtualKeyCode": k.keyCode, "nativeVirtualKeyCode": k.keyCode,
	}
	if k.text != "" {
		down["text"] = k.text
	} else {
		down["type"] = "rawKeyDown"
	}
	if _, err := p.b.call(ctx, p.session, "Input.dispatchKeyEvent", down); err != nil {
		return err
	}
	_, err := p.b.call(ctx, p.session, "Input.dispatchKeyEvent", map[string]any{
		"type": "keyUp", "key": k.key, "code": k.code, "modifiers": modifiers,
		"windowsVirtualKeyCode": k.keyCode, "nativeVirtualKeyCode": k.keyCode,
	})
	return err
}

// Type types text into the focused element, as an input method commits
// it (one input event).
func (p *Page) Type(ctx context.Context, text string) error {
	_, err := p.b.call(ctx, p.session, "Input.insertText", map[string]any{"text": text})
	return err
}
