package thinkingml

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Builders for test replies: small, so that positions in the cases stay readable.

func block(mid string) string { return "<!-- <serp_queries>\n" + mid + "\n</serp_queries> -->" }

const okBlock = "<!-- <serp_queries>\n[\"q1\"]\n</serp_queries> -->"

// okPhase is line-aligned: "<phase id=\"1\">" on one line, title on the next, then text.
const okPhase = "<phase id=\"1\">\n<title>Plan</title>\nReason.\n</phase>"

func thinking(body string) string { return "<thinking>\n" + body + "\n</thinking>" }

func final(body string) string { return "<final>\n" + body + "\n</final>" }

// reply is a valid reply whose thinking body and final body can be swapped out.
func reply(thinkingBody, finalBody string) string {
	return thinking(thinkingBody) + "\n" + final(finalBody)
}

// okFinal is a valid <final> body: Markdown then the block.
const okFinal = "Answer.\n" + okBlock

type validateCase struct {
	name     string
	reply    string
	opts     Options
	errors   []string // "code@line:col", in order
	warnings []string
}

// validateCases holds at least one case for every error and warning code; TestEveryCode
// fails when one is missing.
func validateCases() []validateCase {
	return []validateCase{
		// Valid replies.
		{name: "valid minimal", reply: reply(okPhase, okFinal)},
		{name: "valid with think and serp", reply: "<think>draft</think>\n<serp>intent</serp>\n" + reply(okPhase, okFinal)},
		{name: "valid markdown look-alikes are text", reply: reply(okPhase,
			"R&D, &nbsp;, a < b, x<5, <https://example.com>, <- and <5 or < /b> stay text.\n"+okBlock)},
		{name: "valid entities and char refs", reply: reply(okPhase, "&lt;div&gt; &amp; &#20013; &#x6587; &quot;\n"+okBlock)},
		{name: "valid ids with gaps", reply: reply(strings.Replace(okPhase, `"1"`, `"3"`, 1)+"\n"+
			strings.Replace(okPhase, `"1"`, `"10"`, 1), okFinal)},
		{name: "valid white space around everything", reply: "\n  " + thinking(okPhase) + " \n\t" + final(okFinal) + "\n\n"},
		{name: "valid empty title and self-closing tags", reply: reply("<phase id=\"1\"><title/>x</phase>", okFinal)},
		{name: "valid serp block with CRLF", reply: strings.ReplaceAll(reply(okPhase, okFinal), "\n", "\r\n")},
		{name: "valid closing tag with space", reply: thinking(okPhase) + "\n<final>\n" + okFinal + "\n</final >"},
		{name: "valid serp optional and absent", reply: reply(okPhase, "Answer."), opts: Options{SerpQueriesOptional: true}},
		{name: "valid dashes in other comment are a warning", reply: reply(okPhase+"\n<!-- a -- b -->", okFinal),
			warnings: []string{"comment_outside_serp_block@6:1"}},

		// One case (or more) per error code.
		{name: "empty reply", reply: " \n\t ", errors: []string{"empty_reply@1:1"}},
		{name: "model parsing error", reply: "\n  <<ParsingError>>\n", errors: []string{"model_parsing_error@2:3"}},
		{name: "malformed unclosed element", reply: "<thinking>\n" + okPhase + "\n" + final(okFinal),
			errors: []string{"malformed_xml@1:1"}},
		{name: "malformed mismatched closing tag", reply: reply("<phase id=\"1\">\n<title>Plan</phase>", okFinal),
			errors: []string{"malformed_xml@3:1"}},
		{name: "malformed stray closing tag", reply: reply(okPhase, okFinal) + "\n</thinking>",
			errors: []string{"malformed_xml@13:1"}},
		{name: "malformed comment never closed", reply: reply(okPhase, "Answer.\n<!-- <serp_queries>\n[]"),
			errors: []string{"malformed_xml@9:1", "tag_not_allowed@9:6", "serp_queries_missing@11:1"}},
		{name: "malformed unquoted id", reply: reply("<phase id=1>\n<title>Plan</title>\n</phase>", okFinal),
			errors: []string{"malformed_xml@2:8"}},
		{name: "malformed tag without end", reply: reply(okPhase, okFinal) + "\n<final id=\"x",
			errors: []string{"malformed_xml@13:1", "text_outside_elements@13:1"}},
		{name: "malformed control character", reply: reply(okPhase, "bell \x07\n"+okBlock),
			errors: []string{"malformed_xml@8:6"}},
		{name: "malformed invalid utf-8", reply: reply(okPhase, "bad \xff byte\n"+okBlock),
			errors: []string{"malformed_xml@8:5"}},
		{name: "malformed runs of bad bytes are one error each", reply: reply(okPhase, "\xbc\xbc\xbc 中 \x01\x02\n"+okBlock),
			errors: []string{"malformed_xml@8:1", "malformed_xml@8:7"}},
		{name: "text outside elements", reply: "Sure!\n" + reply(okPhase, okFinal) + "\nBye.",
			errors: []string{"text_outside_elements@1:1", "text_outside_elements@14:1"}},
		{name: "tag not allowed in final", reply: reply(okPhase, "中文<div>x</div><br/>\n"+okBlock),
			errors: []string{"tag_not_allowed@8:3", "tag_not_allowed@8:9", "tag_not_allowed@8:15"}},
		{name: "tag not allowed case variant", reply: reply(okPhase, "<Final>x</Final>\n"+okBlock),
			errors: []string{"tag_not_allowed@8:1", "tag_not_allowed@8:9"}},
		{name: "tag not allowed inside title", reply: reply("<phase id=\"1\">\n<title>A <b>bold</b> title</title>\n</phase>", okFinal),
			errors: []string{"tag_not_allowed@3:10", "tag_not_allowed@3:17"}},
		{name: "tag not allowed inside serp comment is fine but not outside", reply: reply(okPhase, "<a href=\"x\">\n"+okBlock),
			errors: []string{"tag_not_allowed@8:1"}},
		{name: "cdata, declaration and processing instruction", reply: "<?xml version=\"1.0\"?>\n<!DOCTYPE r>\n" +
			reply(okPhase, "<![CDATA[x]]>\n"+okBlock),
			errors: []string{"tag_not_allowed@1:1", "text_outside_elements@1:1", "tag_not_allowed@2:1", "tag_not_allowed@10:1"}},
		{name: "attribute not allowed", reply: reply("<phase id=\"1\" lang=\"en\">\n<title>Plan</title>\n</phase>",
			okFinal) + "",
			errors: []string{"attribute_not_allowed@2:15"}},
		{name: "attribute on final and duplicate id", reply: thinking("<phase id=\"1\" id=\"2\">\n<title>T</title>\n</phase>") +
			"\n<final class='x'>\n" + okFinal + "\n</final>",
			errors: []string{"attribute_not_allowed@2:15", "attribute_not_allowed@6:8"}},
		{name: "nested tag in think and phase at top level", reply: "<think>a <title>t</title></think>\n" + okPhase + "\n" + reply(okPhase, okFinal),
			errors: []string{"nested_tag_not_allowed@1:10", "nested_tag_not_allowed@2:1"}},
		{name: "nested tag in phase and final", reply: reply("<phase id=\"1\">\n<title>T</title>\n<think>x</think>\n</phase>",
			"<title>x</title>\n"+okBlock),
			errors: []string{"nested_tag_not_allowed@4:1", "nested_tag_not_allowed@8:1"}},
		{name: "nested final inside thinking", reply: reply(okPhase+"\n<final>x</final>", okFinal),
			errors: []string{"nested_tag_not_allowed@6:1"}},
		{name: "duplicate element", reply: reply(okPhase, okFinal) + "\n" + final(okFinal),
			errors: []string{"duplicate_element@13:1"}},
		{name: "order violation", reply: "<serp>s</serp>\n<think>t</think>\n" + reply(okPhase, okFinal),
			errors: []string{"order_violation@2:1"}},
		{name: "missing thinking", reply: final(okFinal), errors: []string{"missing_thinking@1:1"}},
		{name: "missing final", reply: thinking(okPhase) + "\n", errors: []string{"missing_final@6:12"}},
		{name: "final not after thinking", reply: thinking(okPhase) + "\nby the way\n" + final(okFinal),
			errors: []string{"final_not_after_thinking@7:1"}},
		{name: "final not after thinking comment", reply: thinking(okPhase) + "<!-- x -->" + final(okFinal),
			errors: []string{"final_not_after_thinking@6:12"}},
		{name: "thinking without phase", reply: reply("just text", okFinal),
			errors: []string{"thinking_without_phase@1:1", "thinking_without_phase@2:1"}},
		{name: "thinking empty", reply: "<thinking/>\n" + final(okFinal), errors: []string{"thinking_without_phase@1:1"}},
		{name: "phase id missing", reply: reply("<phase>\n<title>T</title>\n</phase>", okFinal),
			errors: []string{"phase_id_invalid@2:1"}},
		{name: "phase id not positive", reply: reply(strings.Replace(okPhase, `"1"`, `"0"`, 1)+"\n"+
			strings.Replace(okPhase, `"1"`, `"-2"`, 1)+"\n"+strings.Replace(okPhase, `"1"`, `"07"`, 1)+"\n"+
			strings.Replace(okPhase, `"1"`, `"two"`, 1), okFinal),
			errors: []string{"phase_id_invalid@2:1", "phase_id_invalid@6:1", "phase_id_invalid@10:1", "phase_id_invalid@14:1"}},
		{name: "phase id not increasing", reply: reply(strings.Replace(okPhase, `"1"`, `"2"`, 1)+"\n"+okPhase+"\n"+okPhase, okFinal),
			errors: []string{"phase_id_not_increasing@6:1", "phase_id_not_increasing@10:1"}},
		{name: "phase id compares as a number", reply: reply(strings.Replace(okPhase, `"1"`, `"9"`, 1)+"\n"+
			strings.Replace(okPhase, `"1"`, `"10"`, 1)+"\n"+strings.Replace(okPhase, `"1"`, `"100000000000000000000000"`, 1), okFinal)},
		{name: "phase title missing", reply: reply("<phase id=\"1\">only text</phase>", okFinal),
			errors: []string{"phase_title_missing@2:1"}},
		{name: "phase title duplicate", reply: reply("<phase id=\"1\"><title>A</title><title>B</title></phase>", okFinal),
			errors: []string{"phase_title_duplicate@2:31"}},
		{name: "phase title not first", reply: reply("<phase id=\"1\">text <title>A</title></phase>", okFinal),
			errors: []string{"phase_title_not_first@2:20"}},
		{name: "serp queries missing", reply: reply(okPhase, "Answer."), errors: []string{"serp_queries_missing@9:1"}},
		{name: "serp queries in thinking do not count", reply: reply(okPhase+"\n"+okBlock, "Answer."),
			errors: []string{"serp_queries_missing@12:1"}, warnings: []string{"comment_outside_serp_block@6:1"}},
		{name: "serp queries not last", reply: reply(okPhase, okFinal+"\nP.S."), errors: []string{"serp_queries_not_last@12:1"}},
		{name: "serp queries format indented", reply: reply(okPhase, "Answer.\n  "+okBlock),
			errors: []string{"serp_queries_format@9:3"}},
		{name: "serp queries format one line", reply: reply(okPhase, "Answer.\n<!-- <serp_queries> [\"q\"] </serp_queries> -->"),
			errors: []string{"serp_queries_format@9:1"}},
		{name: "serp queries format indented middle line", reply: reply(okPhase, "Answer.\n"+block(` ["q"]`)),
			errors: []string{"serp_queries_format@9:1"}},
		{name: "serp queries json object", reply: reply(okPhase, block(`{"q":1}`)), errors: []string{"serp_queries_json@9:1"}},
		{name: "serp queries json not strings", reply: reply(okPhase, block(`["a", 1]`)), errors: []string{"serp_queries_json@9:1"}},
		{name: "serp queries json broken", reply: reply(okPhase, block(`["a",`)), errors: []string{"serp_queries_json@9:1"}},
		{name: "serp queries too many", reply: reply(okPhase, block(`["a","b","c","d","e","f"]`)),
			errors: []string{"serp_queries_too_many@9:1"}},
		{name: "serp queries duplicate ignoring case", reply: reply(okPhase, block(`["Squat form","squat form "]`)),
			errors: []string{"serp_queries_duplicate@9:1"}},
		{name: "serp queries too long in code points", reply: reply(okPhase, block(`["`+strings.Repeat("训", 81)+`","`+strings.Repeat("训", 80)+`"]`)),
			errors: []string{"serp_queries_too_long@9:1"}},
		{name: "serp queries sensitive", reply: reply(okPhase, block(`["mail bob@example.org","call +1 415 555 2671","host 192.168.1.20","ip 2001:db8::1","手机13812345678"]`)),
			errors: []string{"serp_queries_sensitive@9:1", "serp_queries_sensitive@9:1", "serp_queries_sensitive@9:1",
				"serp_queries_sensitive@9:1", "serp_queries_sensitive@9:1"}},

		// Warnings.
		{name: "serp queries empty", reply: reply(okPhase, "Hi!\n"+block(`[]`)), warnings: []string{"serp_queries_empty@10:1"}},
		{name: "comment outside serp block", reply: "<!-- hello -->\n" + reply(okPhase, "<!-- note -->\n"+okFinal),
			warnings: []string{"comment_outside_serp_block@1:1", "comment_outside_serp_block@9:1"}},
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range validateCases() {
		t.Run(tc.name, func(t *testing.T) {
			res := Validate(tc.reply, tc.opts)
			if diff := cmp.Diff(orEmpty(tc.errors), flatten(res.Errors)); diff != "" {
				t.Errorf("errors (-want +got):\n%s\nreply:\n%s", diff, tc.reply)
			}
			if diff := cmp.Diff(orEmpty(tc.warnings), flatten(res.Warnings)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if res.Valid != (len(tc.errors) == 0) {
				t.Errorf("Valid = %v with errors %v", res.Valid, res.Errors)
			}
		})
	}
}

func flatten(issues []Issue) []string {
	out := []string{}
	for _, is := range issues {
		out = append(out, fmt.Sprintf("%s@%d:%d", is.Code, is.Line, is.Column))
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// allCodes lists every code the package defines.
func allCodes() []Code {
	return []Code{
		CodeEmptyReply, CodeModelParsingError, CodeMalformedXML, CodeTextOutsideElements, CodeTagNotAllowed,
		CodeAttributeNotAllowed, CodeNestedTagNotAllowed, CodeDuplicateElement, CodeOrderViolation,
		CodeMissingThinking, CodeMissingFinal, CodeFinalNotAfterThinking, CodeThinkingWithoutPhase,
		CodePhaseIDInvalid, CodePhaseIDNotIncreasing, CodePhaseTitleMissing, CodePhaseTitleDuplicate,
		CodePhaseTitleNotFirst, CodeSerpQueriesMissing, CodeSerpQueriesNotLast, CodeSerpQueriesFormat,
		CodeSerpQueriesJSON, CodeSerpQueriesTooMany, CodeSerpQueriesDuplicate, CodeSerpQueriesTooLong,
		CodeSerpQueriesSensitive, CodeSerpQueriesEmpty, CodeCommentOutsideSerpBlock,
	}
}

// TestEveryCodeHasACase fails when a code has no case in validateCases that produces it.
func TestEveryCodeHasACase(t *testing.T) {
	produced := map[Code]bool{}
	for _, tc := range validateCases() {
		res := Validate(tc.reply, tc.opts)
		for _, is := range append(res.Errors, res.Warnings...) {
			produced[is.Code] = true
		}
	}
	for _, c := range allCodes() {
		if !produced[c] {
			t.Errorf("no case produces %s", c)
		}
	}
}

// TestCodesMatchTheDocs holds the codes and their examples in docs/thinkingml.md to the
// package: the same codes, and each example reply produces its row's code.
func TestCodesMatchTheDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/thinkingml.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z_]+)` \\| [^|]+ \\| `(.+)` \\|$")
	var inDocs []string
	for _, line := range strings.Split(string(doc), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		inDocs = append(inDocs, m[1])
		res := Validate(strings.ReplaceAll(m[2], "⏎", "\n"), Options{})
		found := false
		for _, is := range append(res.Errors, res.Warnings...) {
			found = found || string(is.Code) == m[1]
		}
		if !found {
			t.Errorf("the example of %s does not produce it: %+v", m[1], res)
		}
	}
	var ours []string
	for _, c := range allCodes() {
		ours = append(ours, string(c))
	}
	less := func(a, b string) bool { return a < b }
	if diff := cmp.Diff(inDocs, ours, cmpopts.SortSlices(less)); diff != "" {
		t.Errorf("codes (-docs +package):\n%s", diff)
	}
}

func TestResultJSONShape(t *testing.T) {
	tests := []struct {
		name string
		res  Result
		want string
	}{
		{name: "zero result has empty lists", res: Result{},
			want: `{"valid":false,"errors":[],"warnings":[],"summary":{"phases":0,"has_think":false,"has_serp":false,"serp_queries":[],"final_chars":0}}`},
		{name: "empty reply", res: Validate("", Options{}),
			want: `{"valid":false,"errors":[{"code":"empty_reply","message":"the reply is empty","line":1,"column":1}],"warnings":[],"summary":{"phases":0,"has_think":false,"has_serp":false,"serp_queries":[],"final_chars":0}}`},
		{name: "valid reply summary", res: Validate("<think>d</think>"+reply(okPhase, "Héllo.\n"+block(`["q1","q2"]`)), Options{}),
			want: `{"valid":true,"errors":[],"warnings":[],"summary":{"phases":1,"has_think":true,"has_serp":false,"serp_queries":["q1","q2"],"final_chars":6}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.res)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(b)); diff != "" {
				t.Errorf("JSON (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateNeverValidWithForeignTag covers tags hidden in odd places.
func TestValidateNeverValidWithForeignTag(t *testing.T) {
	tests := []struct{ name, reply string }{
		{"in attribute value", reply(`<phase id="<b>"><title>T</title></phase>`, okFinal)},
		{"after unterminated comment", reply(okPhase, okFinal) + "<!-- <div>"},
		{"in cdata", reply(okPhase, "<![CDATA[<div>]]>\n"+okBlock)},
		{"closing self-closing", reply(okPhase, "</br/>\n"+okBlock)},
		{"before end of text with space", reply(okPhase, okFinal) + "<span "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !hasForeignTag(tc.reply) {
				t.Fatalf("test reply holds no foreign tag by the independent check")
			}
			if res := Validate(tc.reply, Options{}); res.Valid {
				t.Errorf("Validate says valid")
			}
		})
	}
}
