package flat

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/chatscopes/chatgen/runtime/llmtest"
)

var (
	reList    = regexp.MustCompile(`(?i)\b(list|inventory|armory|built|have i)\b`)
	reKind    = regexp.MustCompile(`(?i)\b(sword|axe|bow|dagger|staff)\b`)
	reWeapon  = regexp.MustCompile(`(?i)\b(weapon|blade)s?\b`)
	reArmor   = regexp.MustCompile(`(?i)\b(armou?r)\b`)
	rePiece   = regexp.MustCompile(`(?i)\b(helm|breastplate|gauntlets|greaves|shield)\b`)
	reMetal   = regexp.MustCompile(`(?i)\b(leather|iron|steel|mithril)\b`)
	reName    = regexp.MustCompile(`(?i)\b(?:call(?:ed)? it|name(?:d)?(?: it)?)\s+["']?([\p{L}][\p{L}' -]{0,30}?)["']?\s*(?:[.,!]|$)`)
	reNumber  = regexp.MustCompile(`\b(\d{1,3})\b`)
	reElement = regexp.MustCompile(`(?i)\b(fire|frost|lightning)\b`)
	rePower   = regexp.MustCompile(`(?i)\bpower\s+(\d{1,2})\b`)
	reEnchant = regexp.MustCompile(`(?i)\b(enchant\w*)\b`)
	reBind    = regexp.MustCompile(`(?i)\b(bind|apply)\b`)
	reFinish  = regexp.MustCompile(`(?i)\b(finish\w*|done|save|complete)\b`)
)

// Play is the scripted flat armorer: the same story as the scoped one, told
// by one prompt that sees every tool.
func Play(req *llmtest.Request) (llmtest.Reply, error) {
	if results := req.LastToolResults(); len(results) > 0 {
		last := results[len(results)-1].Content
		if msg, ok := strings.CutPrefix(last, "error: "); ok {
			return say("Not yet: " + msg + "."), nil
		}
		return say(followUp(last)), nil
	}
	u := req.LastUserText()
	call := func(name string, args map[string]any) (llmtest.Reply, error) {
		raw, _ := json.Marshal(args)
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: name, Arguments: string(raw)}}}, nil
	}
	switch {
	case reList.MatchString(u):
		return call("listArmory", nil)
	case reElement.MatchString(u):
		return call("setElement", map[string]any{"element": strings.ToLower(reElement.FindStringSubmatch(u)[1])})
	case rePower.MatchString(u):
		n, _ := strconv.Atoi(rePower.FindStringSubmatch(u)[1])
		return call("setPower", map[string]any{"power": n})
	case reBind.MatchString(u):
		return call("bind", nil)
	case reFinish.MatchString(u):
		if buildingArmor(req) {
			return call("finishArmor", nil)
		}
		return call("finishWeapon", nil)
	case rePiece.MatchString(u):
		return call("setPiece", map[string]any{"piece": strings.ToLower(rePiece.FindStringSubmatch(u)[1])})
	case reMetal.MatchString(u):
		return call("setMaterial", map[string]any{"material": strings.ToLower(reMetal.FindStringSubmatch(u)[1])})
	case reKind.MatchString(u):
		return call("setKind", map[string]any{"kind": strings.ToLower(reKind.FindStringSubmatch(u)[1])})
	case reName.MatchString(u):
		return call("setName", map[string]any{"name": strings.TrimSpace(reName.FindStringSubmatch(u)[1])})
	case reNumber.MatchString(u):
		n, _ := strconv.Atoi(reNumber.FindStringSubmatch(u)[1])
		return call("setDamage", map[string]any{"damage": n})
	case reEnchant.MatchString(u):
		return say("Which element shall I bind: fire, frost or lightning?"), nil
	case reArmor.MatchString(u):
		return say("Which piece of armour shall I make: a helm, a breastplate, gauntlets, greaves or a shield?"), nil
	case reWeapon.MatchString(u):
		return say("What kind of weapon shall I forge: a sword, an axe, a bow, a dagger or a staff?"), nil
	}
	return say("Welcome to my forge, traveller! I can build you a weapon or a piece of armour, or show you what you have built."), nil
}

func say(text string) llmtest.Reply { return llmtest.Reply{Text: text} }

// buildingArmor reports whether the last tool called was an armour tool.
func buildingArmor(req *llmtest.Request) bool {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		for _, p := range req.Messages[i].Parts {
			if tc, ok := toolCallName(p); ok {
				return tc == "setPiece" || tc == "setMaterial"
			}
		}
	}
	return false
}

// followUp is the next question after a tool result.
func followUp(result string) string {
	var w Weapon
	if json.Unmarshal([]byte(result), &w) == nil {
		switch {
		case w.Element != "" && w.Power == 0 && w.Kind == "":
			return fmt.Sprintf("%s it is. How strong, from 1 to 10?", w.Element)
		case w.Power != 0 && w.Kind == "":
			return fmt.Sprintf("The runes glow with %s at power %d. Say bind and I will bind them to the weapon.", w.Element, w.Power)
		case w.Kind != "" && w.Name == "":
			return fmt.Sprintf("A fine %s! What shall we call it?", w.Kind)
		case w.Name != "" && w.Damage == 0:
			return fmt.Sprintf("%s, a worthy name. How much damage should it deal, from 1 to 100?", w.Name)
		case w.Name != "":
			return fmt.Sprintf("%s is taking shape: a %s dealing %d damage. Shall I enchant it, or finish it?", w.Name, w.Kind, w.Damage)
		}
	}
	var a Armor
	if json.Unmarshal([]byte(result), &a) == nil && a.Piece != "" {
		if a.Material == "" {
			return fmt.Sprintf("A %s. In leather, iron, steel or mithril?", a.Piece)
		}
		return fmt.Sprintf("A %s %s. Shall I finish it?", a.Material, a.Piece)
	}
	return "Done: " + strings.Trim(result, `"`) + ". What next?"
}
