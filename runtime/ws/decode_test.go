package ws

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// TestUserMessageOnly: the fast path of routeRequest gives the request
// chat.NewDataRequest gives for the JSON text, and is taken only for plain chat messages.
func TestUserMessageOnly(t *testing.T) {
	for _, tc := range []struct {
		data string
		fast bool
	}{
		{`{"userMessage":"hi"}`, true},
		{` { "userMessage" : "hello, world" } `, true},
		{`{"userMessage":"déjà vu"}`, true},
		{`{"userMessage":""}`, true},
		{`{"userMessage":"a\"b"}`, false},
		{`{"userMessage":"a\u0041"}`, false},
		{`{"userMessage":"<b>"}`, false},
		{`{"userMessage":"a&b"}`, false},
		{"{\"userMessage\":\"a\u2028b\"}", false},
		{`{"userMessage":null}`, false},
		{`{"userMessage":3}`, false},
		{`{"userMessage":"hi","damage":3}`, false},
		{`{"damage":3,"userMessage":"hi"}`, false},
		{`{"usermessage":"hi"}`, false},
		{`{}`, false},
		{`null`, false},
	} {
		_, fast := userMessageOnly([]byte(tc.data))
		if fast != tc.fast {
			t.Errorf("%s: fast path %v, want %v", tc.data, fast, tc.fast)
		}
		got, gotErr := routeRequest([]byte(tc.data))
		want, wantErr := chat.NewDataRequest(json.RawMessage(tc.data))
		if (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%s: error %v, want %v", tc.data, gotErr, wantErr)
			continue
		}
		if gotErr != nil {
			continue
		}
		if got.UserMessage() != want.UserMessage() || got.HasUserMessage() != want.HasUserMessage() || strings.Join(got.Keys(), ",") != strings.Join(want.Keys(), ",") {
			t.Errorf("%s: request %q %v %v, want %q %v %v", tc.data, got.UserMessage(), got.HasUserMessage(), got.Keys(), want.UserMessage(), want.HasUserMessage(), want.Keys())
		}
		for _, key := range want.Keys() {
			var g, w any
			var graw, wraw []byte
			if err := got.Decode(key, &g); err != nil {
				t.Errorf("%s: decode %s: %v", tc.data, key, err)
			}
			_ = want.Decode(key, &w)
			_ = got.Decode(key, (*rawJSON)(&graw))
			_ = want.Decode(key, (*rawJSON)(&wraw))
			if !reflect.DeepEqual(g, w) || !bytes.Equal(graw, wraw) {
				t.Errorf("%s: %s decodes to %v %s, want %v %s", tc.data, key, g, graw, w, wraw)
			}
		}
	}
}

// rawJSON is json.RawMessage: Decode into it shows the exact bytes.
type rawJSON []byte

func (r *rawJSON) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}

// TestInvalidJSONFrames: a frame that is not valid JSON is answered when
// its chatId can be read before the error, and dropped otherwise; the
// reader never reads past the error, whatever follows.
func TestInvalidJSONFrames(t *testing.T) {
	deep := strings.Repeat("[", 10001)
	for _, tc := range []struct {
		frame, chatID, requestID, detail string
		answer                           bool
	}{
		{`{"chatId":"c","requestId":7,"data":` + deep, "c", "7", "nested more than 10000 levels", true},
		{`{"chatId":"c","data":{"a":}}`, "c", "", "invalid JSON", true},
		{` { "type" : "Connect" , "chatId" : "c" , "route" : }`, "c", "", "invalid JSON", true},
		{`{"chatId":"c\"d","data":[}`, `c"d`, "", "invalid JSON", true},
		{`{"chatId":"` + strings.Repeat("x", 129) + `","requestId":"r","data":[}`, "", `"r"`, "chatId is longer than 128 bytes", true},
		{`{"data":` + deep + `,"chatId":"c"}`, "", "", "", false}, // the chatId comes after the error
		{`{"chatId":"c`, "", "", "", false},
		{`{"chatId":"c\"`, "", "", "", false},
		{`{"chatId":5,"data":[}`, "", "", "", false},
		{`{"chatId" "c"}`, "", "", "", false},
		{`{"chatId":`, "", "", "", false},
		{`{"`, "", "", "", false},
		{`{`, "", "", "", false},
		{`["chatId","c"`, "", "", "", false},
		{`{"requestId":"r","chatId":"c","requestId":{]`, "c", `"r"`, "invalid JSON", true},
	} {
		_, err := decodeFrame([]byte(tc.frame))
		fe, ok := err.(*frameError)
		if !ok {
			t.Errorf("%.60s: error %v", tc.frame, err)
			continue
		}
		if fe.answer != tc.answer || fe.chatID != tc.chatID || string(fe.requestID) != tc.requestID || !strings.Contains(fe.detail, tc.detail) {
			t.Errorf("%.60s: %+v, want answer=%v chat %q request %s detail %q", tc.frame, fe, tc.answer, tc.chatID, tc.requestID, tc.detail)
		}
	}
}
