package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/longterm/recall"
)

// The offline armorer: a scripted model that plays the whole story from
// natural input — picking tools from the words of the player's message and
// asking the next question from the tools' results — so the example runs
// with no API key. It knows which conversation it is in from the tools it
// is offered.

// playArmorer answers one model request.
func playArmorer(req *llmtest.Request) (llmtest.Reply, error) {
	tools := req.ToolNames()
	switch {
	case isExtraction(req):
		return playExtractor(req), nil
	case slices.Contains(tools, "buildWeapon"):
		return playMenu(req), nil
	case slices.Contains(tools, "setKind"):
		return playWeapon(req), nil
	case slices.Contains(tools, "setElement"):
		return playEnchanter(req), nil
	case slices.Contains(tools, "setPiece"):
		return playArmor(req), nil
	}
	return say("I am only an armorer."), nil
}

func say(text string) llmtest.Reply { return llmtest.Reply{Text: text} }

func calls(cs ...llmtest.ToolCall) llmtest.Reply { return llmtest.Reply{ToolCalls: cs} }

func tool(name string, args map[string]any) llmtest.ToolCall {
	raw, _ := json.Marshal(args)
	return llmtest.ToolCall{Name: name, Arguments: string(raw)}
}

// failure returns a reply about the first failed tool result, if any.
func failure(req *llmtest.Request) (llmtest.Reply, bool) {
	for _, r := range req.LastToolResults() {
		if msg, ok := strings.CutPrefix(r.Content, "error: "); ok {
			return say("Not yet: " + msg + "."), true
		}
	}
	return llmtest.Reply{}, false
}

var (
	wordsWeapon  = regexp.MustCompile(`(?i)\b(weapon|sword|axe|bow|dagger|staff|blade)s?\b`)
	wordsArmor   = regexp.MustCompile(`(?i)\b(armou?r|helm|breastplate|gauntlets|greaves|shield)\b`)
	wordsList    = regexp.MustCompile(`(?i)\b(list|inventory|armory|have i|i(?:'ve| have) built)\b`)
	wordsKind    = regexp.MustCompile(`(?i)\b(sword|axe|bow|dagger|staff)\b`)
	wordsName    = regexp.MustCompile(`(?i)\b(?:call(?:ed)? it|(?:re)?name(?:d)?(?: it)?(?: to)?)\s+["']?([\p{L}][\p{L}' -]{0,30}?)["']?\s*(?:[.,!]|$)`)
	wordsBare    = regexp.MustCompile(`^\s*["']?([\p{L}][\p{L}'-]*(?:\s+[\p{L}][\p{L}'-]*){0,2})["']?\s*[.!]?\s*$`)
	wordsNumber  = regexp.MustCompile(`\b(\d{1,3})\b`)
	wordsEnchant = regexp.MustCompile(`(?i)\b(enchant\w*|magic|runes?)\b`)
	wordsFinish  = regexp.MustCompile(`(?i)\b(finish\w*|done|save|that's all|complete)\b`)
	wordsShow    = regexp.MustCompile(`(?i)\b(show|status|how does it look|what have we)\b`)
	wordsElement = regexp.MustCompile(`(?i)\b(fire|frost|lightning)\b`)
	wordsBind    = regexp.MustCompile(`(?i)\b(bind|apply|done|finish)\b`)
	wordsCancel  = regexp.MustCompile(`(?i)\b(cancel|go back|back to|never ?mind|abandon|forget it|leave it)\b`)
	wordsPiece   = regexp.MustCompile(`(?i)\b(helm|breastplate|gauntlets|greaves|shield)\b`)
	wordsMetal   = regexp.MustCompile(`(?i)\b(leather|iron|steel|mithril)\b`)
	wordsLegend  = regexp.MustCompile(`(?i)\b(legends?|lore|tales?|stor(?:y|ies))\b`)
	wordsDelete  = regexp.MustCompile(`(?i)\b(?:delete|remove|destroy|scrap|melt down)\s+(?:the\s+|my\s+)?["']?([\p{L}][\p{L}' -]{0,30}?)["']?\s*(?:[.!]|$)`)
	wordsTopic   = regexp.MustCompile(`(?i)\b(iron|steel|mithril|leather|fire|frost|lightning|sword|axe|bow|dagger|staff|[a-z]+ium)\b`)
	wordsAsk     = regexp.MustCompile(`(?i)^\s*(who|whom|whose|where|when|why|what|which|how|is|are|was|were|does|do|did|can|could|should|tell me)\b|\?\s*$`)
	wordsOrder   = regexp.MustCompile(`(?i)\b(?:can|could|will|would) you (?:build|make|forge|craft)\b|\b(?:build|make|forge|craft) (?:me|us)\b|\bi (?:want|need|would like|'d like)\b`)
)

// welcome is the main menu's answer to anything else, in markdown.
const welcome = "Welcome to my forge, traveller! I can:\n\n" +
	"- **build** you a weapon: a sword, an axe, a bow, a dagger or a staff,\n" +
	"- make you a piece of **armour**,\n" +
	"- **list** what you have built,\n" +
	"- or tell you the **lore** of the realm: ask me who forged Dawnbreaker.\n\n" +
	"What shall it be?"

func playMenu(req *llmtest.Request) llmtest.Reply {
	if results := req.LastToolResults(); len(results) > 0 && results[0].Name == "legend" {
		// The lore server answered (with -mcp-lore).
		if msg, ok := strings.CutPrefix(results[0].Content, "error: "); ok {
			return say("The old books are silent: " + msg + ".")
		}
		return say(results[0].Content)
	}
	if results := req.LastToolResults(); len(results) > 0 && results[0].Name == ai.DefaultSearchTool {
		return fromLore(loreQuery(req.UserTyped()), results[0].Content)
	}
	if results := req.LastToolResults(); len(results) > 0 && results[0].Name == "deleteItem" {
		return deleted(results[0].Content)
	}
	if r, ok := failure(req); ok {
		return r
	}
	u := req.UserTyped() // without the facts recalled
	if facts := recalledFacts(req); len(facts) > 0 && wordsGreet.MatchString(u) {
		return say(welcomeBack(facts))
	}
	if name, kind := introduction(u); name != "" || kind != "" {
		return say(wellMet(name, kind))
	}
	if m := wordsDelete.FindStringSubmatch(u); m != nil {
		return calls(tool("deleteItem", map[string]any{"item": strings.TrimSpace(m[1])}))
	}
	if slices.Contains(req.ToolNames(), "legend") && wordsLegend.MatchString(u) {
		topic := "the forge"
		if m := wordsTopic.FindStringSubmatch(u); m != nil {
			topic = strings.ToLower(m[1])
		}
		return calls(tool("legend", map[string]any{"topic": topic}))
	}
	switch {
	case wordsList.MatchString(u):
		return calls(tool("listArmory", nil))
	case slices.Contains(req.ToolNames(), ai.DefaultSearchTool) && loreQuestion(u):
		return calls(tool(ai.DefaultSearchTool, map[string]any{"query": loreQuery(u)}))
	case wordsArmor.MatchString(u):
		return calls(tool("buildArmor", nil))
	case wordsWeapon.MatchString(u):
		return calls(tool("buildWeapon", nil))
	}
	return say(welcome)
}

// loreQuestion reports whether the player's message asks about the lore
// (a legend, or a question that is not an order: "who forged
// Dawnbreaker?", not "can you make me a sword?").
func loreQuestion(u string) bool {
	return wordsLegend.MatchString(u) || (wordsAsk.MatchString(u) && !wordsOrder.MatchString(u))
}

// loreQuery is what the armorer searches the lore for: the player's
// message without the words that only say it is about lore ("tell me the
// legend of mithril" searches for "tell me the of mithril": every
// document is a legend, and "legend" would find the one that says so).
func loreQuery(u string) string {
	if q := strings.Join(strings.Fields(wordsLegend.ReplaceAllString(u, "")), " "); q != "" {
		return q
	}
	return u
}

// fromLore is the armorer's answer to question from the passages the lore
// search returned (result, the search tool's JSON): the sentence of the
// passages that shares the most words with the question, and the title
// of its passage. A word of the question in a passage's title counts for
// the whole passage, and half in each of its sentences that has it: it
// says what the passage is about more than which sentence answers.
func fromLore(question, result string) llmtest.Reply {
	if msg, ok := strings.CutPrefix(result, "error: "); ok {
		return say("The old books are out of reach: " + msg + ".")
	}
	var passages []ai.Passage
	if err := json.Unmarshal([]byte(result), &passages); err != nil {
		return say("The old books are out of reach: I cannot read them.")
	}
	asked := stems(question)
	best, score, title := "", 0.0, ""
	for _, p := range passages {
		inTitle := stems(p.Title)
		about := 0.0 // the passage is about what was asked
		for w := range inTitle {
			if asked[w] {
				about += 0.75
			}
		}
		for _, sentence := range sentences(p.Content) {
			s := about
			for w := range stems(sentence) {
				switch {
				case !asked[w]:
				case inTitle[w]:
					s += 0.5
				default:
					s++
				}
			}
			if s > score {
				best, score, title = sentence, s, p.Title
			}
		}
	}
	if best == "" {
		return say("The old books say nothing of that. Ask me of metals, runes, weapons or the places of the realm.")
	}
	return say(best + " (so says *" + title + "*)")
}

var (
	sentenceEnd = regexp.MustCompile(`[.!?]["”’)]?\s+`)
	wordRun     = regexp.MustCompile(`\p{L}+`)
)

// sentences splits a passage into its sentences, leaving out its
// headings.
func sentences(passage string) []string {
	var text []string
	for _, l := range strings.Split(passage, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			text = append(text, l)
		}
	}
	rest := strings.Join(text, " ")
	var out []string
	for rest != "" {
		end := len(rest)
		if loc := sentenceEnd.FindStringIndex(rest); loc != nil {
			end = loc[1]
		}
		out = append(out, strings.TrimSpace(rest[:end]))
		rest = rest[end:]
	}
	return out
}

// stopWords are the words a question shares with any sentence.
var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "any": true, "are": true, "at": true, "be": true, "by": true, "can": true,
	"could": true, "did": true, "do": true, "does": true, "for": true, "from": true, "how": true, "i": true,
	"in": true, "is": true, "it": true, "its": true, "me": true, "my": true, "of": true, "on": true, "or": true,
	"should": true, "so": true, "tell": true, "that": true, "the": true, "their": true, "them": true, "they": true,
	"this": true, "to": true, "was": true, "were": true, "what": true, "when": true, "where": true, "which": true,
	"who": true, "why": true, "with": true, "you": true, "about": true, "has": true, "have": true,
}

// stems returns the words of text, lower-cased, without stop words, with
// their commonest English endings cut (forged and forge both give forg).
func stems(text string) map[string]bool {
	out := map[string]bool{}
	for _, w := range wordRun.FindAllString(strings.ToLower(text), -1) {
		if stopWords[w] {
			continue
		}
		for _, suffix := range []string{"ing", "ed", "es", "e", "s"} {
			if len(w) > len(suffix)+2 && strings.HasSuffix(w, suffix) {
				w = strings.TrimSuffix(w, suffix)
				break
			}
		}
		out[w] = true
	}
	return out
}

// deleted is the armorer's answer once deleteItem ran, or the player
// denied it.
func deleted(result string) llmtest.Reply {
	switch {
	case strings.HasPrefix(result, "the user denied"):
		if _, reason, ok := strings.Cut(result, ": "); ok {
			return say("As you wish, it stays in your armory (" + reason + "). What next?")
		}
		return say("As you wish, it stays in your armory. What next?")
	case strings.HasPrefix(result, "the user did not confirm"):
		return say("I leave your armory as it is.")
	case strings.HasPrefix(result, "error: "):
		return say("I cannot: " + strings.TrimPrefix(result, "error: ") + ".")
	}
	if _, after, ok := strings.Cut(result, "; the result: "); ok {
		result = after // the player changed what to delete
	}
	return say("Done: " + result + " What next?")
}

// The builder's questions for a name: after one, a reply of a few words
// that is no order is the name (bareName).
const (
	askName      = "What shall we call it?"
	askOtherName = "what shall we call this one?"
)

// nameTaken is the builder's answer when finish found the weapon's name
// taken: it says so and what the player can do.
func nameTaken(req *llmtest.Request) (llmtest.Reply, bool) {
	for _, r := range req.LastToolResults() {
		if r.Name == "finish" && strings.Contains(r.Content, ErrDuplicate.Error()) {
			what := "a weapon of that name"
			if name := lastWeapon(req).Name; name != "" {
				what = "a weapon called **" + name + "**"
			}
			return say("Not yet: the armory already holds " + what + ". Give this one another name — " +
				"say *call it* and the name, or just the name — or say *cancel* to leave it unfinished."), true
		}
	}
	return llmtest.Reply{}, false
}

// notNames are the short replies that are no weapon's name.
var notNames = map[string]bool{
	"ok": true, "okay": true, "yes": true, "no": true, "sure": true, "fine": true, "hmm": true, "hm": true,
	"help": true, "what": true, "why": true, "how": true, "huh": true, "thanks": true, "thank you": true, "please": true,
}

// lastArmorerText is the text of the armorer's last answer before the
// player's message.
func lastArmorerText(req *llmtest.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role != llms.ChatMessageTypeAI {
			continue
		}
		var b strings.Builder
		for _, p := range req.Messages[i].Parts {
			if t, ok := p.(llms.TextContent); ok {
				b.WriteString(t.Text)
			}
		}
		if b.Len() > 0 {
			return b.String()
		}
	}
	return ""
}

// askedForAnotherName reports whether the armorer's last answer said the
// weapon's name is taken.
func askedForAnotherName(req *llmtest.Request) bool {
	t := lastArmorerText(req)
	return strings.Contains(t, "another name") || strings.Contains(t, askOtherName)
}

// bareName returns the name in u when the armorer just asked for one and u
// is a few words that are no order ("Frostbite", not "finish").
func bareName(req *llmtest.Request, u string) (string, bool) {
	t := lastArmorerText(req)
	if !strings.Contains(t, askName) && !askedForAnotherName(req) {
		return "", false
	}
	m := wordsBare.FindStringSubmatch(u)
	if m == nil || notNames[strings.ToLower(m[1])] {
		return "", false
	}
	for _, order := range []*regexp.Regexp{wordsEnchant, wordsFinish, wordsShow, wordsCancel, wordsKind} {
		if order.MatchString(u) {
			return "", false
		}
	}
	return m[1], true
}

func playWeapon(req *llmtest.Request) llmtest.Reply {
	if r, ok := nameTaken(req); ok {
		return r
	}
	if r, ok := failure(req); ok {
		return r
	}
	if results := req.LastToolResults(); len(results) > 0 {
		var w Weapon
		if err := json.Unmarshal([]byte(results[len(results)-1].Content), &w); err != nil {
			return say("The forge is quiet. What next?")
		}
		return say(nextWeaponQuestion(w))
	}
	u := req.LastUserText()
	if wordsCancel.MatchString(u) {
		return calls(tool("cancel", nil))
	}
	var cs []llmtest.ToolCall
	if m := wordsKind.FindStringSubmatch(u); m != nil {
		cs = append(cs, tool("setKind", map[string]any{"kind": strings.ToLower(m[1])}))
	}
	if m := wordsName.FindStringSubmatch(u); m != nil {
		cs = append(cs, tool("setName", map[string]any{"name": strings.TrimSpace(m[1])}))
	} else if m := wordsNumber.FindStringSubmatch(u); m != nil {
		n, _ := strconv.Atoi(m[1])
		cs = append(cs, tool("setDamage", map[string]any{"damage": n}))
	} else if name, ok := bareName(req, u); ok {
		cs = append(cs, tool("setName", map[string]any{"name": name}))
	}
	if len(cs) > 0 {
		return calls(cs...)
	}
	switch {
	case wordsEnchant.MatchString(u):
		return calls(tool("enchant", nil))
	case wordsFinish.MatchString(u):
		return calls(tool("finish", nil))
	case wordsShow.MatchString(u):
		return calls(tool("showWeapon", nil))
	}
	w := lastWeapon(req)
	if askedForAnotherName(req) && w.Name != "" {
		// Still taken: finishing would fail again.
		return say("The armory already holds a **" + w.Name + "**: " + askOtherName + " (Or say *cancel*.)")
	}
	return say(nextWeaponQuestion(w))
}

// lastWeapon is the weapon as the last tool result in the conversation
// showed it (the zero Weapon before any).
func lastWeapon(req *llmtest.Request) Weapon {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		for _, p := range req.Messages[i].Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				var w Weapon
				if json.Unmarshal([]byte(r.Content), &w) == nil && w.Kind != "" {
					return w
				}
			}
		}
	}
	return Weapon{}
}

func nextWeaponQuestion(w Weapon) string {
	switch {
	case w.Kind == "":
		return "What kind of weapon shall I forge: a sword, an axe, a bow, a dagger or a staff?"
	case w.Name == "":
		return fmt.Sprintf("A fine %s! %s", w.Kind, askName)
	case w.Damage == 0:
		return fmt.Sprintf("**%s**, a worthy name. How much damage should it deal, from 1 to 100?", w.Name)
	}
	return fmt.Sprintf("**%s** is taking shape: a %s dealing %d damage. Shall I enchant it, or finish it?", w.Name, w.Kind, w.Damage)
}

func playEnchanter(req *llmtest.Request) llmtest.Reply {
	if r, ok := failure(req); ok {
		return r
	}
	if results := req.LastToolResults(); len(results) > 0 {
		var e Enchantment
		_ = json.Unmarshal([]byte(results[len(results)-1].Content), &e)
		switch {
		case e.Element == "":
			return say("Which element shall I bind: fire, frost or lightning?")
		case e.Power == 0:
			return say(fmt.Sprintf("%s it is. How strong, from 1 to 10?", capitalize(string(e.Element))))
		}
		return say(fmt.Sprintf("The runes glow with %s at power %d. Say bind and I will bind them to the weapon.", e.Element, e.Power))
	}
	u := req.LastUserText()
	if wordsCancel.MatchString(u) {
		return calls(tool("cancel", nil))
	}
	var cs []llmtest.ToolCall
	if m := wordsElement.FindStringSubmatch(u); m != nil {
		cs = append(cs, tool("setElement", map[string]any{"element": strings.ToLower(m[1])}))
	}
	if m := wordsNumber.FindStringSubmatch(u); m != nil {
		n, _ := strconv.Atoi(m[1])
		cs = append(cs, tool("setPower", map[string]any{"power": n}))
	}
	if len(cs) > 0 {
		return calls(cs...)
	}
	if wordsBind.MatchString(u) {
		return calls(tool("bind", nil))
	}
	return say("Which element shall I bind: fire, frost or lightning?")
}

func playArmor(req *llmtest.Request) llmtest.Reply {
	if r, ok := failure(req); ok {
		return r
	}
	if results := req.LastToolResults(); len(results) > 0 {
		var a Armor
		_ = json.Unmarshal([]byte(results[len(results)-1].Content), &a)
		switch {
		case a.Piece == "":
			return say("Which piece: a helm, a breastplate, gauntlets, greaves or a shield?")
		case a.Material == "":
			return say(fmt.Sprintf("A %s. In leather, iron, steel or mithril?", a.Piece))
		}
		return say(fmt.Sprintf("A %s %s. Shall I finish it?", a.Material, a.Piece))
	}
	u := req.LastUserText()
	if wordsCancel.MatchString(u) {
		return calls(tool("cancel", nil))
	}
	var cs []llmtest.ToolCall
	if m := wordsPiece.FindStringSubmatch(u); m != nil {
		cs = append(cs, tool("setPiece", map[string]any{"piece": strings.ToLower(m[1])}))
	}
	if m := wordsMetal.FindStringSubmatch(u); m != nil {
		cs = append(cs, tool("setMaterial", map[string]any{"material": strings.ToLower(m[1])}))
	}
	if len(cs) > 0 {
		return calls(cs...)
	}
	if wordsFinish.MatchString(u) {
		return calls(tool("finishArmor", nil))
	}
	return say("Which piece of armour shall I make: a helm, a breastplate, gauntlets, greaves or a shield?")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// The armorer remembers players across conversations (the Main Menu's
// long-term memory, runtime/longterm/recall): after each turn a model call
// lists what the turn taught about the player — here, the name and the
// favourite weapon kind the player tells — and before each turn the facts
// that share a word with the player's message come with it, in the
// per-request context slot.

var (
	wordsMyName  = regexp.MustCompile(`\b(?i:my name is|call me|i am|i'm|it's)\s+(\p{Lu}[\p{L}'-]{1,30})`)
	wordsFavKind = regexp.MustCompile(`(?i)\b(?:favou?rite(?: weapon| kind(?: of weapon)?)? is|i (?:love|prefer|like))\s+(?:the\s+|an?\s+)?(sword|axe|bow|dagger|staff)(?:e?s)?\b`)
	wordsGreet   = regexp.MustCompile(`(?i)\b(hello|hi|greetings|remember me|i'm back|again)\b`)
	factName     = regexp.MustCompile(`^The player's name is (.+)\.$`)
	factKind     = regexp.MustCompile(`^The player's favourite weapon kind is the (\w+)\.$`)
)

// introduction returns the name and the favourite weapon kind the player
// tells in u ("" for none).
func introduction(u string) (name, kind string) {
	if m := wordsMyName.FindStringSubmatch(u); m != nil {
		name = m[1]
	}
	if m := wordsFavKind.FindStringSubmatch(u); m != nil {
		kind = strings.ToLower(m[1])
	}
	return name, kind
}

// wellMet answers a player who tells their name or favourite weapon kind.
func wellMet(name, kind string) string {
	var b strings.Builder
	if name != "" {
		b.WriteString("Well met, " + name + "! I will remember you. ")
	}
	if kind != "" {
		b.WriteString("A " + kind + " it is, then: ask me to build one whenever you like.")
	} else {
		b.WriteString("What shall I build for you?")
	}
	return strings.TrimSpace(b.String())
}

// welcomeBack greets a returning player from the facts recalled.
func welcomeBack(facts []string) string {
	name, kind := "traveller", ""
	for _, f := range facts {
		if m := factName.FindStringSubmatch(f); m != nil {
			name = m[1]
		}
		if m := factKind.FindStringSubmatch(f); m != nil {
			kind = m[1]
		}
	}
	if kind == "" {
		return "Welcome back, " + name + "! What shall I build for you?"
	}
	return "Welcome back, " + name + "! Another " + kind + ", as you like them? Say *build me " + article(kind) + " " + kind + "* and we start."
}

// recalledFacts returns the facts runtime/ai put in the player's message
// (one JSON string a line between <facts> and </facts>).
func recalledFacts(req *llmtest.Request) []string {
	text := req.LastUserText()
	_, block, ok := strings.Cut(text, "<facts>\n")
	if !ok || !strings.HasPrefix(text, ai.FactsHeader) {
		return nil
	}
	block, _, _ = strings.Cut(block, "</facts>")
	var out []string
	for _, line := range strings.Split(block, "\n") {
		var f string
		if json.Unmarshal([]byte(line), &f) == nil && f != "" {
			out = append(out, f)
		}
	}
	return out
}

// isExtraction reports whether req is the long-term memory's extraction
// call.
func isExtraction(req *llmtest.Request) bool {
	if len(req.Messages) == 0 || req.Messages[0].Role != llms.ChatMessageTypeSystem || len(req.Messages[0].Parts) == 0 {
		return false
	}
	t, ok := req.Messages[0].Parts[0].(llms.TextContent)
	return ok && t.Text == recall.ExtractSystem
}

// playExtractor answers the extraction call: the name and the favourite
// weapon kind the player told in the turn, as facts, unless known.
func playExtractor(req *llmtest.Request) llmtest.Reply {
	prompt := req.LastUserText()
	known, turn, _ := strings.Cut(prompt, "\nTurn:\n")
	var facts []string
	for _, line := range strings.Split(turn, "\n") {
		u, ok := strings.CutPrefix(line, "User: ")
		if !ok {
			continue
		}
		name, kind := introduction(u)
		if name != "" {
			facts = append(facts, "The player's name is "+name+".")
		}
		if kind != "" {
			facts = append(facts, "The player's favourite weapon kind is the "+kind+".")
		}
	}
	var fresh []string
	for _, f := range facts {
		q, _ := json.Marshal(f)
		if !strings.Contains(known, string(q)) {
			fresh = append(fresh, f)
		}
	}
	if fresh == nil {
		fresh = []string{}
	}
	b, _ := json.Marshal(map[string][]string{"facts": fresh})
	return say(string(b))
}
